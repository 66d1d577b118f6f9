package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// A wake that other writes queue behind takes smaller chunks (see
// retryWakeChunkShared) and still moves every parked item once, within
// the spread, counting one event.
func TestWakeWithWritesQueuedBehindIt(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n, spread = 3000, time.Minute
	sched, err := retry.New(s, retry.Config{Jitter: -1, WakeJitter: spread})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]retry.NewItem, n)
	for i := range items {
		items[i] = retry.NewItem{ID: fmt.Sprintf("w%05d", i), Host: "w.example"}
	}
	if _, err := sched.Add(ctx, items...); err != nil {
		t.Fatal(err)
	}
	for left := n; left > 0; {
		ls, err := sched.Claim(ctx, retry.ClaimParams{N: retry.MaxClaim, Lease: time.Minute})
		if err != nil || len(ls) == 0 {
			t.Fatalf("claim: %d leases, %v", len(ls), err)
		}
		out := make([]retry.Outcome, len(ls))
		for i, l := range ls {
			out[i] = retry.Outcome{Lease: l.Ref(), Op: retry.OpFail, Class: "timeout"}
		}
		if _, err := sched.Settle(ctx, out); err != nil {
			t.Fatal(err)
		}
		left -= len(ls)
	}
	before, err := sched.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Writes that queue for the writer for as long as the wake runs.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = s.tx(ctx, func(tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, `UPDATE retry_host_wakes SET one = one WHERE one = 0`)
					return err
				})
			}
		})
	}
	waits := s.w.Stats().WaitCount
	start := time.Now()
	res, err := sched.WakeHost(ctx, "w.example")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if s.w.Stats().WaitCount == waits {
		t.Fatal("no write queued behind the wake; the test proves nothing")
	}
	if res.Woken != n {
		t.Fatalf("the wake moved %d items; want %d", res.Woken, n)
	}
	after, err := sched.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := after.HostWakes - before.HostWakes; d != 1 {
		t.Errorf("the wake counted %d events; want 1", d)
	}
	if d := after.HostWoken - before.HostWoken; d != n {
		t.Errorf("the wake counted %d items; want %d", d, n)
	}
	for _, it := range items {
		got, err := sched.Get(ctx, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.NextAt.Before(start.Add(-time.Second)) || got.NextAt.After(time.Now().Add(spread)) {
			t.Fatalf("%s due at %v; want within the spread after the wake", it.ID, got.NextAt)
		}
	}
}
