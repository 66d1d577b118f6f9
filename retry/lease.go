package retry

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// Op is what a worker does with a lease.
type Op int

// The lease operations. Their numeric values are the driver's, which
// stores them as the record of how a lease was settled.
const (
	// OpSucceed marks the item done.
	OpSucceed = Op(retrydriver.OpSucceed)
	// OpFail counts a failure of a class and schedules the next attempt on
	// that class's ladder.
	OpFail = Op(retrydriver.OpFail)
	// OpRelease gives the item back without counting the attempt; it is due
	// again at once.
	OpRelease = Op(retrydriver.OpRelease)
	// OpExtend moves the lease's end to now + the given duration.
	OpExtend = Op(retrydriver.OpExtend)
	// opExpire is the scheduler's own settlement of a lease that ran out
	// too often in a row. Workers never send it.
	opExpire = Op(retrydriver.OpExpire)
)

func (o Op) String() string { return retrydriver.Op(o).String() }

// LeaseRef names a lease: the item and the token Claim returned with it.
type LeaseRef struct {
	ID    string `json:"id"`
	Token string `json:"lease"`
}

// Lease is an item handed to a worker by Claim. The worker settles it with
// Succeed, Fail or Release (or Settle for many at once) before Until, or
// extends it.
type Lease struct {
	ID string `json:"id"`
	// Token proves the lease: a secret of 128 random bits, unique to this
	// lease. Operations with any other token (an older lease's, another
	// item's) fail with ErrLeaseLost.
	Token string `json:"lease"`
	// Term orders the leases: it grows with every lease granted in the
	// database, so a later lease on any item has a higher term. Pass it to
	// downstream systems that must refuse writes from a superseded holder
	// (fencing).
	Term int64 `json:"term"`
	// Until is when the lease runs out.
	Until time.Time `json:"until"`
	// Attempt is 1 for the first lease on the item, 2 for the second, ...
	Attempt int `json:"attempt"`
	// Failures counts failures since the last success.
	Failures  int    `json:"failures"`
	LastClass string `json:"last_class,omitempty"`
	Priority  int    `json:"priority"`
	Payload   []byte `json:"payload,omitempty"`
}

// Ref returns the reference that lease operations take.
func (l Lease) Ref() LeaseRef { return LeaseRef{ID: l.ID, Token: l.Token} }

// Outcome is one lease operation in a Settle batch.
type Outcome struct {
	Lease LeaseRef `json:"lease"`
	Op    Op       `json:"op"`
	// Class and Note describe a failure (OpFail only). Class is required;
	// the note is cut to MaxNoteBytes.
	Class string `json:"class,omitempty"`
	Note  string `json:"note,omitempty"`
	// Source names where the failure's evidence came from — a tracker, a
	// DHT node, an indexer (OpFail only; optional, at most MaxSourceBytes).
	// The item keeps it among its Sources, and a class that escalates by
	// sources takes its step from them.
	Source string `json:"source,omitempty"`
	// Host names the host the item depends on (OpFail only; optional; see
	// NormalizeHost). It replaces the item's host; empty keeps it. With a
	// host-level class (Scheduler.IsHostClass), the host answering again
	// ends the wait early (Scheduler.WakeHost).
	Host string `json:"host,omitempty"`
	// Extend is the new lease length from now (OpExtend only).
	Extend time.Duration `json:"extend,omitempty"`
}

// Succeed marks the leased item done. See Settle for the rules on stale,
// repeated and late calls.
func (s *Scheduler) Succeed(ctx context.Context, ref LeaseRef) error {
	return s.settleOne(ctx, Outcome{Lease: ref, Op: OpSucceed})
}

// Fail records a failure of class with a short note and schedules the next
// attempt on the class's ladder (Config.Default for classes without one of
// their own), at the step given by the failures in a row so far (or by
// the distinct sources of a class that escalates by sources). To name the
// failure's source, settle it with an Outcome whose Source is set.
func (s *Scheduler) Fail(ctx context.Context, ref LeaseRef, class, note string) error {
	return s.settleOne(ctx, Outcome{Lease: ref, Op: OpFail, Class: class, Note: note})
}

// Release gives the item back unused: the attempt is not counted and the
// item is due again at once.
func (s *Scheduler) Release(ctx context.Context, ref LeaseRef) error {
	return s.settleOne(ctx, Outcome{Lease: ref, Op: OpRelease})
}

// Extend makes the lease run until now+d and returns the new end.
func (s *Scheduler) Extend(ctx context.Context, ref LeaseRef, d time.Duration) (time.Time, error) {
	now := s.now()
	errs, err := s.settle(ctx, []Outcome{{Lease: ref, Op: OpExtend, Extend: d}}, now, false)
	if err != nil {
		return time.Time{}, err
	}
	if errs[0] != nil {
		return time.Time{}, errs[0]
	}
	return now.Add(d.Truncate(time.Microsecond)), nil
}

// SettleOne applies one lease operation, as Settle does for a batch of
// one, with its errors as Succeed, Fail, Release and Extend return them
// (an *InputError's Field is "class", not "outcomes[0].class"). It is
// how a failure names its source or host.
func (s *Scheduler) SettleOne(ctx context.Context, o Outcome) error {
	return s.settleOne(ctx, o)
}

func (s *Scheduler) settleOne(ctx context.Context, o Outcome) error {
	errs, err := s.settle(ctx, []Outcome{o}, s.now(), false)
	if err != nil {
		return err
	}
	return errs[0]
}

// Settle applies many lease operations at once, which is how busy workers
// should report results: successes in one statement, the rest in one
// transaction. Each outcome is applied on its own terms; the batch is not
// all-or-nothing. The returned slice has one entry per outcome: nil when it
// took effect (or repeated one that had), ErrLeaseLost, ErrNotFound when
// the item has been forgotten, or an *InputError (Field "class" or "note")
// for a failure whose class or note cannot be stored: that outcome changes
// nothing (the lease stays, so the worker may send it again with a good
// class, or let it run out), while the others in the batch take effect.
// The error is for the whole batch: a malformed lease reference or
// operation, which only a broken caller sends (nothing is applied), or a
// store failure (outcomes before it may have been applied; sending the
// batch again is safe, since repeats are harmless).
//
// Rules for every lease operation:
//   - A token from an older lease (the item was claimed again since) gets
//     ErrLeaseLost and changes nothing.
//   - Repeating Succeed, Fail or Release with the token it already settled
//     returns nil and changes nothing, so a worker may retry a call whose
//     answer it never saw. A different operation on a settled lease gets
//     ErrLeaseLost.
//   - A lease that ran out but whose item nobody has claimed since is still
//     honoured: its holder may succeed, fail, release or extend it. Taking
//     a late result beats redoing the work. The exception is an expiry that
//     the scheduler has already counted as a ClassLeaseExpired failure: that
//     settled the lease, and its holder gets ErrLeaseLost.
func (s *Scheduler) Settle(ctx context.Context, outcomes []Outcome) ([]error, error) {
	return s.settle(ctx, outcomes, s.now(), true)
}

func (s *Scheduler) settle(ctx context.Context, outcomes []Outcome, now time.Time, batch bool) ([]error, error) {
	if len(outcomes) == 0 {
		return nil, nil
	}
	if len(outcomes) > MaxClaim {
		return nil, invalid("outcomes", "%d outcomes in one Settle, more than %d", len(outcomes), MaxClaim)
	}
	keys := make([]string, len(outcomes))
	ids := make([]string, len(outcomes))
	// hosts holds the outcomes' hosts as stored, so that the caller's
	// slice is not changed.
	var hosts []string
	refused := make([]error, len(outcomes))
	for i := range outcomes {
		o := &outcomes[i]
		// A single operation's fields are named plainly ("class"); a
		// batch's by their place in it ("outcomes[2].class").
		field := func(err error) error {
			if !batch {
				return err
			}
			return inField("outcomes["+strconv.Itoa(i)+"]", err)
		}
		if err := checkID(o.Lease.ID); err != nil {
			return nil, field(err)
		}
		if err := checkToken(o.Lease.Token); err != nil {
			return nil, field(err)
		}
		keys[i], ids[i] = o.Lease.Token, o.Lease.ID
		switch o.Op {
		case OpSucceed, OpRelease:
			if o.Host != "" {
				return nil, field(invalid("host", "goes with a failure only"))
			}
		case OpFail:
			// The class and note come from the failure the worker saw,
			// not from Claim: in a batch, a bad one refuses its own
			// outcome only, so the other results still count.
			err := checkClass(o.Class)
			if err == nil {
				err = checkNote(o.Note)
			}
			if err == nil {
				err = checkSource(o.Source)
			}
			if err == nil && o.Host != "" {
				var h string
				if h, err = NormalizeHost(o.Host); err == nil {
					if hosts == nil {
						hosts = make([]string, len(outcomes))
					}
					hosts[i] = h
				}
			}
			switch {
			case err == nil:
			case batch:
				refused[i] = err
			default:
				return nil, err
			}
		case OpExtend:
			if o.Host != "" {
				return nil, field(invalid("host", "goes with a failure only"))
			}
			if o.Extend < time.Microsecond || o.Extend > MaxLease {
				return nil, field(invalid("lease_seconds", "extension %v is outside [1µs, %v]", o.Extend, MaxLease))
			}
		default:
			return nil, field(invalid("op", "unknown operation %d (want succeed, fail, release or extend)", int(o.Op)))
		}
	}
	errs := make([]error, len(outcomes))
	todo := make([]int, 0, len(outcomes))
	for i, err := range refused {
		if err != nil {
			errs[i] = err
			continue
		}
		todo = append(todo, i)
	}
	if hosts != nil {
		outcomes = slices.Clone(outcomes)
		for i, h := range hosts {
			outcomes[i].Host = h
		}
	}
	rest := s.succeedFast(ctx, outcomes, todo, ids, keys, now)
	if len(rest) == 0 {
		return errs, nil
	}
	res, err := s.applyOutcomes(ctx, outcomes, rest, now)
	if err != nil {
		return nil, err
	}
	for k, i := range rest {
		errs[i] = res[k]
	}
	return errs, nil
}

// applyOutcomes judges outcomes[rest] against their stored records, in
// one store update, and returns each one's result in rest's order.
func (s *Scheduler) applyOutcomes(ctx context.Context, outcomes []Outcome, rest []int, now time.Time) ([]error, error) {
	ids := make([]string, len(rest))
	for k, i := range rest {
		ids[k] = outcomes[i].Lease.ID
	}
	res, err := s.store.RetryUpdate(ctx, retrydriver.UpdateParams{
		Now:        now,
		IDs:        ids,
		WakeBefore: wakeBefore(now),
		Apply: func(k int, r *retrydriver.Record) (bool, error) {
			o := outcomes[rest[k]]
			return s.applyOutcome(r, o, o.Lease.Token, now)
		},
	})
	if err != nil {
		return nil, err
	}
	return res.Errs, nil
}

// succeedParams is the store's one-statement success for the entries idx
// of ids and keys, sorted by id so that it locks rows in the order every
// batch writer uses. It sorts idx into that order.
func succeedParams(ids, keys []string, idx []int, now time.Time) retrydriver.SucceedParams {
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	q := retrydriver.SucceedParams{Now: now, IDs: make([]string, len(idx)), Keys: make([]string, len(idx))}
	for k, i := range idx {
		q.IDs[k], q.Keys[k] = ids[i], keys[i]
	}
	return q
}

// succeedFast marks live leases done through the store's one-statement
// path and returns the indexes of the outcomes still to be judged (nil when
// none are). Successes are most of a busy worker's traffic; the general
// path's locking read and write-back of every column cost several times
// more. It only applies when no id repeats in the batch, so that outcomes
// on one item are still applied in their order.
func (s *Scheduler) succeedFast(ctx context.Context, outcomes []Outcome, todo []int, ids, keys []string, now time.Time) []int {
	var fast []int
	seen := make(map[string]bool, len(todo))
	for _, i := range todo {
		if seen[ids[i]] {
			fast = nil
			break
		}
		seen[ids[i]] = true
		if outcomes[i].Op == OpSucceed {
			fast = append(fast, i)
		}
	}
	if len(fast) == 0 {
		return todo
	}
	res, err := s.store.RetrySucceed(ctx, succeedParams(ids, keys, fast, now))
	if err != nil || len(res.Done) != len(fast) {
		// The general path will report the error, or get it right.
		return todo
	}
	applied := make(map[int]bool, len(fast))
	for k, i := range fast {
		applied[i] = res.Done[k]
	}
	var rest []int
	for _, i := range todo {
		if !applied[i] {
			rest = append(rest, i)
		}
	}
	return rest
}

// applyOutcome decides one lease operation against the stored record.
func (s *Scheduler) applyOutcome(r *retrydriver.Record, o Outcome, token string, now time.Time) (bool, error) {
	if !tokenMatches(r.LeaseKey, token) {
		return false, ErrLeaseLost
	}
	if r.SettledGen == r.LeaseGen {
		if r.SettledOp == retrydriver.Op(o.Op) && o.Op != OpExtend {
			return false, nil
		}
		return false, ErrLeaseLost
	}
	switch o.Op {
	case OpSucceed:
		r.State = retrydriver.Done
		r.NextAt = time.Time{}
		r.Failures = 0
	case OpFail:
		class := o.Class
		h, err := decodeHistory(r.History)
		if err != nil {
			return false, fmt.Errorf("retry: item %q: %w", r.ID, err)
		}
		es, err := decodeEvidence(r.Sources)
		if err != nil {
			return false, fmt.Errorf("retry: item %q: %w", r.ID, err)
		}
		if o.Source != "" {
			es = noteEvidence(es, Evidence{Source: o.Source, At: now, Class: class})
			r.Sources = encodeEvidence(es)
		}
		r.Failures++
		r.LastClass = class
		if o.Host != "" {
			r.Host = o.Host
		}
		r.History = encodeHistory(appendHistory(h, Attempt{At: now, Class: class, Note: clipNote(o.Note)}))
		r.State = retrydriver.Scheduled
		r.NextAt = now.Add(s.delay(class, r.Failures, distinctSources(es, class)))
	case OpRelease:
		r.Attempts = max(r.Attempts-1, 0)
		if r.Attempts == 0 {
			r.State = retrydriver.Pending
		} else {
			r.State = retrydriver.Scheduled
		}
		r.NextAt = now
	case OpExtend:
		r.State = retrydriver.Leased
		r.NextAt = now.Add(o.Extend.Truncate(time.Microsecond))
		r.UpdatedAt = now
		return true, nil
	}
	r.Expiries = 0
	r.Worker = ""
	r.SettledGen = r.LeaseGen
	r.SettledOp = retrydriver.Op(o.Op)
	r.UpdatedAt = now
	return true, nil
}

// applyExpiry counts a lease that ran out for the ExpiriesPerFailure-th time
// in a row as a failure of class ClassLeaseExpired. The store reported the
// item from a claim; by now another node may have handled it, so every
// condition is checked again.
func (s *Scheduler) applyExpiry(r *retrydriver.Record, now time.Time) (bool, error) {
	if r.State != retrydriver.Leased || r.NextAt.After(now) || r.Expiries+1 < s.cfg.ExpiriesPerFailure {
		return false, nil
	}
	h, err := decodeHistory(r.History)
	if err != nil {
		return false, fmt.Errorf("retry: item %q: %w", r.ID, err)
	}
	r.Failures++
	r.LastClass = ClassLeaseExpired
	r.History = encodeHistory(appendHistory(h, Attempt{
		At:    now,
		Class: ClassLeaseExpired,
		Note:  fmt.Sprintf("lease ran out %d times in a row", r.Expiries+1),
	}))
	r.State = retrydriver.Scheduled
	es, err := decodeEvidence(r.Sources)
	if err != nil {
		return false, fmt.Errorf("retry: item %q: %w", r.ID, err)
	}
	r.NextAt = now.Add(s.delay(ClassLeaseExpired, r.Failures, distinctSources(es, ClassLeaseExpired)))
	r.Expiries = 0
	r.Worker = ""
	r.SettledGen = r.LeaseGen
	r.SettledOp = retrydriver.OpExpire
	r.UpdatedAt = now
	return true, nil
}
