package retry_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/storetest"
)

// TestStatsAndDueAgree: Stats, Due and StatsAndDue say "due now" of the
// same items on both engines — pending and scheduled items whose time has
// come — and count a lease that ran out apart; the histogram's buckets add
// up to the waiting items of the counters read with it.
func TestStatsAndDueAgree(t *testing.T) {
	engines := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "h.db") },
		"postgres": func(t *testing.T) string { return storetest.PostgresDSN(t) },
	}
	for name, dsn := range engines {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, err := hostguard.Open(ctx, dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			s, err := retry.New(st, retry.Config{Now: clock.Now, Jitter: -1})
			if err != nil {
				t.Fatal(err)
			}
			// Two items claimed with a one-minute lease, then three
			// more added: after two minutes the leases have run out and
			// the three are due.
			for _, id := range []string{"l1", "l2"} {
				if _, err := s.Add(ctx, retry.NewItem{ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			if ls, err := s.Claim(ctx, retry.ClaimParams{N: 2, Lease: time.Minute}); err != nil || len(ls) != 2 {
				t.Fatalf("claim: %v %v", ls, err)
			}
			for _, id := range []string{"d1", "d2", "d3"} {
				if _, err := s.Add(ctx, retry.NewItem{ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Add(ctx, retry.NewItem{ID: "later", NotBefore: clock.Now().Add(2 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Minute)

			stats, err := s.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			due, err := s.Due(ctx)
			if err != nil {
				t.Fatal(err)
			}
			both, hist, err := s.StatsAndDue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for what, got := range map[string]int{"Stats": stats.DueNow, "Due": due.Buckets[0].Count,
				"StatsAndDue's Stats": both.DueNow, "StatsAndDue's histogram": hist.Buckets[0].Count} {
				if got != 3 {
					t.Errorf("%s: %d due now; want 3 (the leases that ran out are not due)", what, got)
				}
			}
			if stats.LeasesExpired != 2 || both.LeasesExpired != 2 {
				t.Errorf("leases expired %d and %d; want 2", stats.LeasesExpired, both.LeasesExpired)
			}
			if waiting := both.ByState["pending"] + both.ByState["scheduled"]; hist.Waiting != waiting || waiting != 4 {
				t.Errorf("the histogram counts %d waiting, the counters read with it %d; want 4", hist.Waiting, waiting)
			}
			if both.OldestDueLag != 2*time.Minute {
				t.Errorf("oldest due lag %v; want 2m", both.OldestDueLag)
			}
		})
	}
}
