package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/retry"
)

// openScheduler opens the store at dsn (a file path or a postgres:// URL)
// and a scheduler on it with cfg.
func openScheduler(ctx context.Context, dsn string, cfg retry.Config) (*retry.Scheduler, func(), error) {
	st, err := hostguard.Open(ctx, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("queue: open hostguard store: %w", err)
	}
	s, err := retry.New(st, cfg)
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return s, func() { _ = st.Close() }, nil
}

func itemID(prefix string, i int) string { return fmt.Sprintf("%s-%08d", prefix, i) }

// addItems adds n items named prefix-i, in batches, due at notBefore (zero
// means at once).
func addItems(ctx context.Context, s *retry.Scheduler, prefix string, n, batch int, notBefore time.Time) error {
	items := make([]retry.NewItem, 0, batch)
	for i := 0; i < n; i += batch {
		items = items[:0]
		for j := i; j < min(i+batch, n); j++ {
			items = append(items, retry.NewItem{ID: itemID(prefix, j), NotBefore: notBefore})
		}
		if _, err := s.Add(ctx, items...); err != nil {
			return fmt.Errorf("queue: add: %w", err)
		}
	}
	return nil
}

// claimAndSucceedWait claims up to n items, waiting up to wait for work,
// and records them all as succeeded, calling seen for each. It returns how
// many it settled and how long the Claim call took.
func claimAndSucceedWait(ctx context.Context, s *retry.Scheduler, n int, wait time.Duration, seen func(retry.Lease)) (int, time.Duration, error) {
	t0 := time.Now()
	leases, err := s.Claim(ctx, retry.ClaimParams{N: n, Lease: time.Minute, Worker: "bench", Wait: wait})
	took := time.Since(t0)
	if err != nil || len(leases) == 0 {
		return 0, took, err
	}
	outcomes := make([]retry.Outcome, len(leases))
	for i, l := range leases {
		if seen != nil {
			seen(l)
		}
		outcomes[i] = retry.Outcome{Lease: l.Ref(), Op: retry.OpSucceed}
	}
	errs, err := s.Settle(ctx, outcomes)
	if err != nil {
		return 0, took, fmt.Errorf("queue: settle: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return 0, took, fmt.Errorf("queue: settle: %w", err)
	}
	return len(leases), took, nil
}

// BatchWorker reports each batch's successes with its next claim
// (Scheduler.SucceedAndClaim), so that a batch costs one store transaction
// instead of a claim's and a settlement's. One goroutine uses it.
type BatchWorker struct {
	s    *retry.Scheduler
	n    int
	held []retry.LeaseRef
}

// NewBatchWorker is a BatchWorker of s claiming up to n items at a time.
func NewBatchWorker(s *retry.Scheduler, n int) *BatchWorker { return &BatchWorker{s: s, n: n} }

// Next records the batch held as succeeded and claims up to w.n more. It
// waits up to wait for work only when it holds nothing: successes are
// then counted when they commit, never after a wait. It returns how many
// items it settled and how many it claimed.
func (w *BatchWorker) Next(ctx context.Context, wait time.Duration) (settled, claimed int, err error) {
	if len(w.held) > 0 {
		wait = 0
	}
	leases, errs, err := w.s.SucceedAndClaim(ctx, w.held, retry.ClaimParams{N: w.n, Lease: time.Minute, Worker: "bench", Wait: wait})
	if err != nil {
		return 0, 0, err
	}
	if err := errors.Join(errs...); err != nil {
		return 0, 0, fmt.Errorf("queue: succeed: %w", err)
	}
	settled = len(w.held)
	w.held = w.held[:0]
	for _, l := range leases {
		w.held = append(w.held, l.Ref())
	}
	return settled, len(leases), nil
}

// Finish settles the batch still held, when the loop ends with one.
func (w *BatchWorker) Finish(ctx context.Context) (int, error) {
	if len(w.held) == 0 {
		return 0, nil
	}
	outcomes := make([]retry.Outcome, len(w.held))
	for i, ref := range w.held {
		outcomes[i] = retry.Outcome{Lease: ref, Op: retry.OpSucceed}
	}
	errs, err := w.s.Settle(ctx, outcomes)
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return 0, fmt.Errorf("queue: settle: %w", err)
	}
	n := len(w.held)
	w.held = w.held[:0]
	return n, nil
}

// HostguardCycle adds o.N items to the empty store at dsn, then works them
// all with o.Workers goroutines claiming and settling o.ClaimBatch at a time.
func HostguardCycle(ctx context.Context, dsn string, o CycleOptions) (Cycle, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return Cycle{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Limit)
	defer cancel()
	s, closeStore, err := openScheduler(ctx, dsn, retry.Config{})
	if err != nil {
		return Cycle{}, err
	}
	defer closeStore()

	c := Cycle{System: "hostguard", N: o.N}
	t0 := time.Now()
	if err := addItems(ctx, s, "job", o.N, o.AddBatch, time.Time{}); err != nil {
		return c, err
	}
	c.Add = time.Since(t0)

	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, o.Workers)
	t0 = time.Now()
	for w := range o.Workers {
		wg.Go(func() {
			bw := NewBatchWorker(s, o.ClaimBatch)
			for done.Load() < int64(o.N) {
				settled, claimed, err := bw.Next(ctx, 0)
				if err != nil {
					errs[w] = err
					return
				}
				if settled == 0 && claimed == 0 { // the rest are leased by other workers
					time.Sleep(time.Millisecond)
				}
				done.Add(int64(settled))
			}
			n, err := bw.Finish(ctx)
			done.Add(int64(n))
			errs[w] = err
		})
	}
	wg.Wait()
	c.Work = time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if got := done.Load(); got != int64(o.N) {
		return c, fmt.Errorf("queue: hostguard worked %d items, want %d", got, o.N)
	}
	return c, nil
}
