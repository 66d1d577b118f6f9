package evidence_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/internal/sqlitetest"
)

// gatedStore wraps a real store; EvidenceSummaries (the snapshot refresh)
// counts its calls, reports each start on started and then waits for a
// token on gate.
type gatedStore struct {
	evidence.Store
	calls   atomic.Int32
	started chan struct{}
	gate    chan struct{}
	fail    atomic.Bool
}

func newGated(t *testing.T) *gatedStore {
	return &gatedStore{Store: sqlitetest.Open(t), started: make(chan struct{}, 16), gate: make(chan struct{})}
}

func (g *gatedStore) EvidenceSummaries(ctx context.Context, p evidence.StoreSummariesParams) ([]evidence.SummaryRow, error) {
	g.calls.Add(1)
	g.started <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if g.fail.Load() {
		return nil, errors.New("database unavailable")
	}
	return g.Store.EvidenceSummaries(ctx, p)
}

// finish lets the running refresh through and waits for it to publish.
func (g *gatedStore) finish(b *evidence.Book) {
	g.gate <- struct{}{}
	evidence.WaitRefresh(b)
}

func TestSnapshotReadersNeverWaitAndRefreshOnce(t *testing.T) {
	t.Parallel()
	clk := newClock()
	st := newGated(t)
	b := newBook(t, st, evidence.Config{Now: clk.Now})
	if err := b.Record(ctx(t), evidence.Check{Source: "a", Subject: "m1", Verdict: evidence.Available}); err != nil {
		t.Fatal(err)
	}

	// Before the first set: nothing known, and readers do not wait even
	// though the refresh they started is blocked.
	readAll := func(check func(*evidence.Snapshot) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					if err := check(b.Snapshot()); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait() // returns while the refresh is still held on the gate
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	readAll(func(s *evidence.Snapshot) error {
		if s.Known() || s.Verdict("m1") != evidence.Unknown {
			return errors.New("before the first set a reader saw a known set")
		}
		return nil
	})
	<-st.started
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("%d refreshes started by 1600 concurrent reads, want 1", n)
	}
	st.finish(b)

	first := b.Snapshot()
	if !first.Known() || first.Verdict("m1") != evidence.Available || first.Len() != 1 {
		t.Fatalf("first set: known=%v m1=%v len=%d", first.Known(), first.Verdict("m1"), first.Len())
	}
	if st.calls.Load() != 1 {
		t.Fatal("a fresh set triggered a refresh")
	}

	// Age: at MaxAge the old set is still served while one refresh runs.
	clk.Advance(evidence.DefaultMaxAge - time.Millisecond)
	if b.Snapshot() != first || st.calls.Load() != 1 {
		t.Fatal("a set younger than MaxAge was refreshed")
	}
	clk.Advance(time.Millisecond)
	readAll(func(s *evidence.Snapshot) error {
		if s != first {
			return errors.New("a reader did not get the previous set during the refresh")
		}
		return nil
	})
	<-st.started
	if n := st.calls.Load(); n != 2 {
		t.Fatalf("%d refreshes after the set aged, want 2", n)
	}
	st.finish(b)
	second := b.Snapshot()
	if second == first || !second.ComputedAt().Equal(clk.Now()) {
		t.Fatalf("second set computed at %v, want %v", second.ComputedAt(), clk.Now())
	}
}

func TestSnapshotStaleAfterVerdictAndInvalidation(t *testing.T) {
	t.Parallel()
	clk := newClock()
	st := newGated(t)
	b := newBook(t, st, evidence.Config{Fingerprint: "p1", Now: clk.Now})
	b.Snapshot()
	<-st.started
	st.finish(b)
	if s := b.Snapshot(); !s.Known() || s.Len() != 0 {
		t.Fatalf("empty store: known=%v len=%d", s.Known(), s.Len())
	}

	// A new verdict makes the set stale at once, without the clock moving.
	if err := b.Record(ctx(t), evidence.Check{Source: "a", Subject: "m1", Verdict: evidence.Available}); err != nil {
		t.Fatal(err)
	}
	if s := b.Snapshot(); s.Verdict("m1") != evidence.Unknown {
		t.Fatal("the old set should be served while the refresh runs")
	}
	<-st.started
	st.finish(b)
	if s := b.Snapshot(); s.Verdict("m1") != evidence.Available || s.Fingerprint() != "p1" {
		t.Fatalf("after refresh m1 = %v (fingerprint %q)", s.Verdict("m1"), s.Fingerprint())
	}

	// So does an invalidation.
	if _, err := b.InvalidatePolicy(ctx(t), "p2"); err != nil {
		t.Fatal(err)
	}
	if s := b.Snapshot(); s.Verdict("m1") != evidence.Available {
		t.Fatal("the old set should be served while the refresh runs")
	}
	<-st.started
	st.finish(b)
	if s := b.Snapshot(); s.Verdict("m1") != evidence.Unknown || s.Fingerprint() != "p2" {
		t.Fatalf("after invalidation m1 = %v (fingerprint %q)", s.Verdict("m1"), s.Fingerprint())
	}
	if n := st.calls.Load(); n != 3 {
		t.Fatalf("%d refreshes, want 3", n)
	}
}

func TestSnapshotFailedRefreshKeepsSetAndBacksOff(t *testing.T) {
	t.Parallel()
	clk := newClock()
	st := newGated(t)
	b := newBook(t, st, evidence.Config{Now: clk.Now, RefreshRetry: 5 * time.Second})
	if err := b.Record(ctx(t), evidence.Check{Source: "a", Subject: "m1", Verdict: evidence.Unavailable}); err != nil {
		t.Fatal(err)
	}
	b.Snapshot()
	<-st.started
	st.finish(b)
	good := b.Snapshot()

	st.fail.Store(true)
	clk.Advance(evidence.DefaultMaxAge)
	b.Snapshot()
	<-st.started
	st.finish(b)
	if s := b.Snapshot(); s != good {
		t.Fatal("a failed refresh replaced the set")
	}
	if n := st.calls.Load(); n != 2 {
		t.Fatalf("%d refreshes; a failure must hold readers off for RefreshRetry", n)
	}
	clk.Advance(5 * time.Second)
	st.fail.Store(false)
	b.Snapshot()
	<-st.started
	st.finish(b)
	if s := b.Snapshot(); s == good || s.Verdict("m1") != evidence.Unavailable {
		t.Fatal("the retry after RefreshRetry did not publish a new set")
	}
}

func TestCloseCancelsBlockedRefresh(t *testing.T) {
	t.Parallel()
	st := newGated(t)
	b, err := evidence.New(st, evidence.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.Snapshot()
	<-st.started
	done := make(chan struct{})
	go func() { b.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not cancel the blocked refresh")
	}
}
