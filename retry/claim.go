package retry

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/internal/inputtext"
	"github.com/hostguard/hostguard/retry/retrydriver"
)

// ClaimParams says what a worker wants from Claim.
type ClaimParams struct {
	// N is the most items to hand out, 1 to MaxClaim.
	N int `json:"n"`
	// Lease is how long the worker may hold each item before it may be
	// handed to someone else: 1µs to MaxLease.
	Lease time.Duration `json:"lease"`
	// Worker names the claimant for Get and logs; optional, at most 128
	// bytes.
	Worker string `json:"worker,omitempty"`
	// Wait is how long Claim may wait for work when nothing is due: at
	// most MaxClaimWait. Zero means not at all; negative is an error. A
	// waiting claim is woken as soon as an item is added, observed,
	// failed or released anywhere the store can hear of (every node on
	// PostgreSQL, every handle in the process on SQLite), or comes due by
	// time, and looks again every Config.ClaimPoll in any case.
	Wait time.Duration `json:"wait,omitempty"`
}

// Claim leases up to p.N due items: highest priority first, then the one
// due longest. An item is due when its next time has come, or when its
// lease has run out (without counting a failure, unless it ran out
// Config.ExpiriesPerFailure times in a row; then it is scheduled on the
// ClassLeaseExpired ladder instead).
//
// While never-tried (pending) items are due, items that were tried before
// take at most the retry share of the claim: Config.RetryShare×N, rounded
// down or up at random with the probability of the fraction (so a claim of
// one item takes a retry 30 % of the time under the default share). When no
// pending item is due, retries may fill the whole claim, and the other way
// round. The cap applies whatever the priorities: a boosted retry still
// counts against it.
//
// Claim returns an empty slice, not an error, when nothing is due — at
// once, or after p.Wait if it is set. A waiting claim returns as soon as it
// leased something, and returns ctx.Err() if ctx ends first.
func (s *Scheduler) Claim(ctx context.Context, p ClaimParams) ([]Lease, error) {
	if err := checkClaim(p); err != nil {
		return nil, err
	}
	if p.Wait == 0 {
		return s.claimOnce(ctx, p)
	}
	return s.claimWait(ctx, p, func(ctx context.Context) ([]Lease, error) { return s.claimOnce(ctx, p) })
}

func checkClaim(p ClaimParams) error {
	if p.N < 1 || p.N > MaxClaim {
		return invalid("n", "%d is outside [1, %d]", p.N, MaxClaim)
	}
	if p.Lease < time.Microsecond || p.Lease > MaxLease {
		return invalid("lease_seconds", "%v is outside [1µs, %v]", p.Lease, MaxLease)
	}
	if err := checkWorker(p.Worker); err != nil {
		return err
	}
	if p.Wait < 0 || p.Wait > MaxClaimWait {
		return invalid("wait_seconds", "%v is outside [0, %v]", p.Wait, MaxClaimWait)
	}
	return nil
}

// wakeBefore is the WakeBefore of a write at now. Every claim waiting
// then ends by now+MaxClaimWait, and a claim that starts later reads the
// store afresh, so an item due no sooner needs no wake-up: without this,
// every sighting (due in ReactivateWithin, 10 minutes by default) and
// every failure would send every idle worker of the cluster to look for
// work that is not there.
func wakeBefore(now time.Time) time.Time { return now.Add(MaxClaimWait) }

// minRecheck spaces the looks of a waiting claim whose store says work is
// already due but that found none (another claim holds it locked): it
// will be leased or given back soon, and a wake-up then follows.
const minRecheck = 5 * time.Millisecond

// claimWait claims with first, and while nothing is due waits for a
// wake-up, the next due time, the poll or the end of p.Wait, whichever
// comes first, and claims again with plain claims. Waiting uses the real
// clock: Config.Now decides what is due, not how long a caller is kept.
func (s *Scheduler) claimWait(ctx context.Context, p ClaimParams, first func(context.Context) ([]Lease, error)) ([]Lease, error) {
	deadline := time.Now().Add(p.Wait)
	look := first
	for {
		// The wake-up channel is taken before the look, so that a change
		// committed after the look cannot be missed.
		wake, err := s.store.RetryWake(ctx)
		if err != nil {
			return nil, err
		}
		ls, err := look(ctx)
		look = func(ctx context.Context) ([]Lease, error) { return s.claimOnce(ctx, p) }
		if err != nil || len(ls) > 0 {
			return ls, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return ls, nil
		}
		pause := left
		if s.cfg.ClaimPoll > 0 {
			pause = min(pause, s.cfg.ClaimPoll)
		}
		next, err := s.store.RetryNextDue(ctx, retrydriver.NextDueParams{})
		if err != nil {
			return nil, err
		}
		if !next.At.IsZero() {
			pause = min(pause, max(next.At.Sub(s.now()), minRecheck))
		}
		s.waiting.Add(1)
		timer := time.NewTimer(pause)
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		s.waiting.Add(-1)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// Waiting reports how many claims of this Scheduler are waiting for work
// right now: idle workers, for a dashboard.
func (s *Scheduler) Waiting() int { return int(s.waiting.Load()) }

// claimOnce is one look for due work.
func (s *Scheduler) claimOnce(ctx context.Context, p ClaimParams) ([]Lease, error) {
	now := s.now()
	res, err := s.store.RetryClaim(ctx, s.storeClaim(p, now))
	if err != nil {
		return nil, err
	}
	return s.claimed(ctx, res, now, p.Lease)
}

// storeClaim is the store's part of a claim at now.
func (s *Scheduler) storeClaim(p ClaimParams, now time.Time) retrydriver.ClaimParams {
	return retrydriver.ClaimParams{
		Now:          now,
		N:            p.N,
		RetryQuota:   s.retryQuota(p.N),
		Lease:        p.Lease.Truncate(time.Microsecond),
		Worker:       p.Worker,
		Keys:         newTokens(p.N),
		PromoteLimit: promoteLimit,
		MaxExpiries:  s.cfg.ExpiriesPerFailure,
	}
}

// claimed records the expiries a claim at now reported and returns its
// grants as leases of length lease, none of them born stale (see fresh).
func (s *Scheduler) claimed(ctx context.Context, res retrydriver.ClaimResult, now time.Time, lease time.Duration) ([]Lease, error) {
	if len(res.Expired) > 0 {
		// A failure here leaves the items due; the next claim retries.
		if _, err := s.store.RetryUpdate(ctx, retrydriver.UpdateParams{
			Now:   now,
			IDs:   res.Expired,
			Apply: func(_ int, r *retrydriver.Record) (bool, error) { return s.applyExpiry(r, now) },
		}); err != nil && len(res.Grants) == 0 {
			return nil, err
		}
	}
	return s.fresh(ctx, leasesFrom(res.Grants), lease)
}

// freshAttempts bounds how often fresh extends a claim's leases anew.
const freshAttempts = 3

// fresh returns ls with every lease good for at least half its length
// from now. A claim stamps its leases' end from the moment it started;
// one that then waited in the store (a lock, a slow disk, a lost packet)
// would hand out leases that end soon or have already ended, whose items
// another worker may claim at once, so that the work is done twice. Such
// leases are extended to a whole length from now, under their tokens: one
// whose item was claimed again meanwhile (ErrLeaseLost) is left to its new
// holder and not returned, nor is one still stale after freshAttempts,
// whose item its expiry hands out again.
func (s *Scheduler) fresh(ctx context.Context, ls []Lease, lease time.Duration) ([]Lease, error) {
	lease = lease.Truncate(time.Microsecond)
	for attempt := 0; ; attempt++ {
		now := s.now()
		var stale []int
		for i, l := range ls {
			if l.Until.Sub(now) < lease/2 {
				stale = append(stale, i)
			}
		}
		if len(stale) == 0 {
			return ls, nil
		}
		drop := make(map[int]bool, len(stale))
		if attempt == freshAttempts {
			for _, i := range stale {
				drop[i] = true
			}
		} else {
			outcomes := make([]Outcome, len(stale))
			for k, i := range stale {
				outcomes[k] = Outcome{Lease: ls[i].Ref(), Op: OpExtend, Extend: lease}
			}
			errs, err := s.settle(ctx, outcomes, now, false)
			if err != nil {
				return nil, err
			}
			for k, i := range stale {
				if errs[k] != nil {
					drop[i] = true
					continue
				}
				ls[i].Until = now.Add(lease)
			}
		}
		kept := ls[:0]
		for i, l := range ls {
			if !drop[i] {
				kept = append(kept, l)
			}
		}
		ls = kept
	}
}

// leasesFrom turns grants into leases in claim order: highest priority
// first, then the one due longest.
func leasesFrom(grants []retrydriver.Grant) []Lease {
	slices.SortStableFunc(grants, func(a, b retrydriver.Grant) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		return a.DueAt.Compare(b.DueAt)
	})
	out := make([]Lease, len(grants))
	for i, g := range grants {
		out[i] = Lease{
			ID:        g.ID,
			Token:     g.Key,
			Term:      g.Gen,
			Until:     g.Until,
			Attempt:   g.Attempt,
			Failures:  g.Failures,
			LastClass: g.LastClass,
			Priority:  g.Priority,
			Payload:   g.Payload,
		}
	}
	return out
}

// maxWorkerBytes is the longest worker name accepted.
const maxWorkerBytes = 128

func checkWorker(w string) error {
	if len(w) > maxWorkerBytes {
		return invalid("worker", "is %d bytes, more than %d", len(w), maxWorkerBytes)
	}
	if err := inputtext.Check(w); err != nil {
		return invalid("worker", "%s %v", strconv.Quote(w), err)
	}
	return nil
}
