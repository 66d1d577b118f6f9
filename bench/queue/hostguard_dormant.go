package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// HostguardDormant loads o.Backlog items due in a month into the empty store
// at dsn, then trickles due items in while one worker claims them, then
// reactivates o.Burst backlog items with Observe and drains them.
func HostguardDormant(ctx context.Context, dsn string, o DormantOptions) (Dormant, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return Dormant{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Limit)
	defer cancel()
	// Reactivated items become due at once, as River's JobRetry makes a
	// job available now, so the drain measures claiming them rather than
	// a configured delay. (With 1 ms, a woken worker looked before the
	// item was due, found nothing, and looked again 5 ms later.)
	s, closeStore, err := openScheduler(ctx, dsn, retry.Config{ReactivateWithin: time.Microsecond, SyncSightings: o.SyncSightings})
	if err != nil {
		return Dormant{}, err
	}
	defer closeStore()

	d := Dormant{System: "hostguard", Backlog: o.Backlog, Burst: o.Burst}
	t0 := time.Now()
	if err := addItems(ctx, s, "dormant", o.Backlog, retry.MaxAdd, time.Now().Add(30*24*time.Hour)); err != nil {
		return d, err
	}
	d.Load = time.Since(t0)

	// Trickle, twice: a worker that sleeps o.Poll after an empty claim,
	// then one that waits in a blocking claim.
	if d.PollLags, d.Claims, err = hostguardTrickle(ctx, s, "pdue", o, false); err != nil {
		return d, err
	}
	if d.Lags, _, err = hostguardTrickle(ctx, s, "due", o, true); err != nil {
		return d, err
	}

	// Bursts: reactivate backlog items spread over the whole id range while
	// two workers in blocking claims drain them; first one Observe call per item from four
	// callers, then (on other items) ObserveMany in batches of 1 000.
	step := o.Backlog / o.Burst
	ids := func(offset int) []string {
		out := make([]string, o.Burst)
		for i := range out {
			out[i] = itemID("dormant", i*step+offset)
		}
		return out
	}
	one := func(ctx context.Context, ids []string) error {
		_, err := s.Observe(ctx, ids[0], retry.ObserveParams{})
		return err
	}
	if d.Reactivate, d.Drain, err = hostguardBurst(ctx, s, ids(0), 1, 4, one); err != nil {
		return d, err
	}
	many := func(ctx context.Context, ids []string) error {
		_, err := s.ObserveMany(ctx, ids, retry.ObserveParams{})
		return err
	}
	d.BatchReactivate, d.BatchDrain, err = hostguardBurst(ctx, s, ids(1), 1_000, 1, many)
	return d, err
}

// hostguardBurst reactivates ids, per chunks of size, from callers
// goroutines, while two workers in blocking claims take them until every
// one of them is done. It returns how long the reactivation calls took and
// how long until the last item was settled, both from the first call.
func hostguardBurst(ctx context.Context, s *retry.Scheduler, ids []string, size, callers int,
	reactivate func(context.Context, []string) error) (time.Duration, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const workers = 2
	var next, drained, drainedAt atomic.Int64
	errs := make([]error, callers+workers)
	var callWG, workWG sync.WaitGroup
	t0 := time.Now()
	for w := range workers {
		workWG.Go(func() {
			bw := NewBatchWorker(s, 100)
			count := func(n int) {
				if n > 0 && drained.Add(int64(n)) >= int64(len(ids)) {
					// The last one: the other worker may be waiting.
					drainedAt.CompareAndSwap(0, int64(time.Since(t0)))
					cancel()
				}
			}
			for drained.Load() < int64(len(ids)) {
				n, _, err := bw.Next(ctx, time.Second)
				if err != nil {
					if drainedAt.Load() == 0 { // not the cancellation below
						errs[callers+w] = err
					}
					return
				}
				count(n)
			}
			n, err := bw.Finish(ctx)
			if err != nil && drainedAt.Load() == 0 {
				errs[callers+w] = err
			}
			count(n)
		})
	}
	for c := range callers {
		callWG.Go(func() {
			for {
				i := int(next.Add(int64(size))) - size
				if i >= len(ids) {
					return
				}
				if err := reactivate(ctx, ids[i:min(i+size, len(ids))]); err != nil {
					errs[c] = fmt.Errorf("queue: reactivate: %w", err)
					return
				}
			}
		})
	}
	callWG.Wait()
	calls := time.Since(t0)
	if err := errors.Join(errs[:callers]...); err != nil {
		cancel()
		workWG.Wait()
		return calls, 0, err
	}
	workWG.Wait()
	// The last settlement can beat this goroutine back from the calls.
	return calls, max(calls, time.Duration(drainedAt.Load())), errors.Join(errs...)
}

// hostguardTrickle adds o.Trickle due items named prefix-i at a steady
// pace while one worker claims them, polling or blocking, and returns each
// item's lag (from its insert starting to the worker holding it) and the
// duration of every claim call.
func hostguardTrickle(ctx context.Context, s *retry.Scheduler, prefix string, o DormantOptions, block bool) (lags, claims []time.Duration, err error) {
	// UnixNano when the insert began: the lag includes the insert itself,
	// for both systems, and never depends on which side wins a race.
	added := make([]atomic.Int64, o.Trickle)
	feedErr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(max(o.Every, time.Microsecond))
		defer tick.Stop()
		for i := range o.Trickle {
			added[i].Store(time.Now().UnixNano())
			if _, err := s.Add(ctx, retry.NewItem{ID: itemID(prefix, i)}); err != nil {
				feedErr <- fmt.Errorf("queue: trickle add: %w", err)
				return
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				feedErr <- ctx.Err()
				return
			}
		}
		feedErr <- nil
	}()
	var seenErr error
	seen := func(l retry.Lease) {
		i, err := strconv.Atoi(strings.TrimPrefix(l.ID, prefix+"-"))
		if err != nil || i < 0 || i >= o.Trickle {
			seenErr = fmt.Errorf("queue: claimed %q during the trickle, a backlog item that is not due", l.ID)
			return
		}
		lags = append(lags, time.Since(time.Unix(0, added[i].Load())))
	}
	wait := time.Duration(0)
	if block {
		wait = time.Second
	}
	for got := 0; got < o.Trickle; {
		n, took, err := claimAndSucceedWait(ctx, s, 100, wait, seen)
		if err != nil {
			return lags, claims, err
		}
		if seenErr != nil {
			return lags, claims, seenErr
		}
		claims = append(claims, took)
		got += n
		if n == 0 && !block {
			time.Sleep(o.Poll)
		}
	}
	return lags, claims, <-feedErr
}
