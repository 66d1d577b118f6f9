package retry

import (
	"context"
	"strconv"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// SucceedAndClaim marks the items of done succeeded and claims the next
// batch as Claim(ctx, p) would, in one store transaction where the Store
// can (both bundled engines can): a busy worker's loop then commits once
// per batch instead of twice, and on a shared disk every commit saved is
// a flush left for other writers. Pass the leases of the previous batch
// that worked, settle the others with Settle, and settle the last batch
// with Settle when the loop ends.
//
// The []error has one entry per entry of done, as Settle reports it: nil
// when the success took effect (or repeated one that had), ErrLeaseLost,
// or ErrNotFound. A stale or unknown lease is reported in its entry and
// keeps neither the other successes nor the claim from taking effect.
// The items marked done are never among the leases returned.
//
// Everything is checked before anything is written: p as Claim checks it,
// and every reference as Settle checks it (Field "done[i]" for the i-th);
// bad input is an *InputError and changes nothing. A context that has
// ended before the call writes nothing either.
//
// With p.Wait set, the successes are committed by the first look for
// work, whatever happens next; the later looks of the wait are plain
// claims. If the context ends while waiting, or a later look fails, the
// error comes with the []error of the successes, which stand.
//
// The call is one transaction only when the Store implements
// retrydriver.SucceedClaimer and no item is named twice in done; otherwise
// the successes are settled first and the claim follows, with the same
// results. In one transaction, a store failure leaves nothing applied.
// One case takes a second transaction: a reference the succeed step did
// not mark done (stale, repeated, forgotten) is judged after the claim
// through the general path; if that write fails, its entry holds the
// store's error (sending it again with Settle is safe) while the leases,
// which are committed, are still returned.
func (s *Scheduler) SucceedAndClaim(ctx context.Context, done []LeaseRef, p ClaimParams) ([]Lease, []error, error) {
	if err := checkClaim(p); err != nil {
		return nil, nil, err
	}
	if len(done) > MaxClaim {
		return nil, nil, invalid("done", "%d leases in one SucceedAndClaim, more than %d", len(done), MaxClaim)
	}
	seen := make(map[string]bool, len(done))
	twice := false
	for i, ref := range done {
		field := "done[" + strconv.Itoa(i) + "]"
		if err := checkID(ref.ID); err != nil {
			return nil, nil, inField(field, err)
		}
		if err := checkToken(ref.Token); err != nil {
			return nil, nil, inField(field, err)
		}
		twice = twice || seen[ref.ID]
		seen[ref.ID] = true
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if len(done) == 0 {
		ls, err := s.Claim(ctx, p)
		return ls, nil, err
	}
	sc, ok := s.store.(retrydriver.SucceedClaimer)
	if !ok || twice {
		// Settle applies outcomes on one item in their order, which one
		// statement over distinct ids cannot.
		outcomes := make([]Outcome, len(done))
		for i, ref := range done {
			outcomes[i] = Outcome{Lease: ref, Op: OpSucceed}
		}
		errs, err := s.settle(ctx, outcomes, s.now(), true)
		if err != nil {
			return nil, nil, err
		}
		ls, err := s.Claim(ctx, p)
		return ls, errs, err
	}
	var errs []error
	first := func(ctx context.Context) ([]Lease, error) {
		ls, e, err := s.succeedClaimOnce(ctx, sc, done, p)
		errs = e
		return ls, err
	}
	if p.Wait == 0 {
		ls, err := first(ctx)
		return ls, errs, err
	}
	ls, err := s.claimWait(ctx, p, first)
	return ls, errs, err
}

// succeedClaimOnce is one transaction of SucceedAndClaim, and the judging
// of the references it did not mark done.
func (s *Scheduler) succeedClaimOnce(ctx context.Context, sc retrydriver.SucceedClaimer, done []LeaseRef, p ClaimParams) ([]Lease, []error, error) {
	now := s.now()
	outcomes := make([]Outcome, len(done))
	ids, keys := make([]string, len(done)), make([]string, len(done))
	order := make([]int, len(done))
	for i, ref := range done {
		outcomes[i] = Outcome{Lease: ref, Op: OpSucceed}
		ids[i], keys[i], order[i] = ref.ID, ref.Token, i
	}
	q := succeedParams(ids, keys, order, now)
	res, err := sc.RetrySucceedClaim(ctx, retrydriver.SucceedClaimParams{Succeed: q, Claim: s.storeClaim(p, now)})
	if err != nil {
		return nil, nil, err
	}
	errs := make([]error, len(done))
	var rest []int
	for k, i := range order {
		// A store that answers for the wrong number of ids has all of
		// them judged again; a success repeated there is harmless.
		if len(res.Succeed.Done) != len(done) || !res.Succeed.Done[k] {
			rest = append(rest, i)
		}
	}
	if len(rest) > 0 {
		// The claim is committed: a failure of this second write is
		// each of these successes' to report, not the call's.
		judged, err := s.applyOutcomes(ctx, outcomes, rest, now)
		for k, i := range rest {
			if err != nil {
				errs[i] = err
			} else {
				errs[i] = judged[k]
			}
		}
	}
	ls, err := s.claimed(ctx, res.Claim, now, p.Lease)
	return ls, errs, err
}
