package retry_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/sqlite"
)

func openSQLite(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hostguard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestJitterSpreadsSimultaneousFailures fails 10 000 items at one instant
// through a real store and checks that their next attempts spread over the
// whole ±10 % band instead of landing together.
func TestJitterSpreadsSimultaneousFailures(t *testing.T) {
	const n = 10_000
	ctx := context.Background()
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(11, 12))
	now := t0
	s, err := retry.New(openSQLite(t), retry.Config{Now: func() time.Time { return now }, Rand: rng.Float64})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]retry.NewItem, n)
	for i := range items {
		items[i] = retry.NewItem{ID: fmt.Sprintf("%040x", i)}
	}
	if _, err := s.Add(ctx, items...); err != nil {
		t.Fatal(err)
	}
	for claimed := 0; claimed < n; {
		ls, err := s.Claim(ctx, retry.ClaimParams{N: retry.MaxClaim, Lease: time.Minute})
		if err != nil || len(ls) == 0 {
			t.Fatalf("claim after %d: %d leases, %v", claimed, len(ls), err)
		}
		out := make([]retry.Outcome, len(ls))
		for i, l := range ls {
			out[i] = retry.Outcome{Lease: l.Ref(), Op: retry.OpFail, Class: "no_peers"}
		}
		if _, err := s.Settle(ctx, out); err != nil {
			t.Fatal(err)
		}
		claimed += len(ls)
	}
	// Read the spread the way workers see it: how many items are due at
	// points across the band.
	base := retry.DefaultLadder[0]
	lo, hi := t0.Add(base-base/10), t0.Add(base+base/10)
	dueAt := func(at time.Time) int {
		now = at
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.DueNow
	}
	if d := dueAt(lo.Add(-time.Microsecond)); d != 0 {
		t.Fatalf("%d items due before the band starts", d)
	}
	if d := dueAt(hi); d != n {
		t.Fatalf("%d of %d items due when the band ends", d, n)
	}
	if d := dueAt(lo.Add(5 * time.Second)); d == 0 {
		t.Errorf("nothing due in the band's first 5s: the spread does not reach its lower edge")
	}
	if d := dueAt(hi.Add(-5 * time.Second)); d == n {
		t.Errorf("everything due 5s before the band ends: the spread does not reach its upper edge")
	}
	// Twenty slices of 18 s each should hold about 500 items apiece.
	const slices = 20
	prev := 0
	for k := 1; k <= slices; k++ {
		d := dueAt(lo.Add(hi.Sub(lo) * time.Duration(k) / slices))
		if got := d - prev; got < n/slices/2 || got > n/slices*3/2 {
			t.Errorf("slice %d of the band holds %d items, want about %d", k, got, n/slices)
		}
		prev = d
	}
}
