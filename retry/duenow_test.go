package retry_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/storetest"
)

// TestDueNow makes a failed item due at once on both engines: a claim
// takes it, its failures stay, and a leased or done item is left alone.
func TestDueNow(t *testing.T) {
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
			if _, err := s.Add(ctx, retry.NewItem{ID: "a"}); err != nil {
				t.Fatal(err)
			}
			ls, err := s.Claim(ctx, retry.ClaimParams{N: 1, Lease: time.Minute})
			if err != nil || len(ls) != 1 {
				t.Fatalf("claim: %v %v", ls, err)
			}
			if res, err := s.DueNow(ctx, "a"); err != nil || res.Moved || res.State != retry.Leased {
				t.Fatalf("DueNow of a leased item: %+v %v; want it left alone", res, err)
			}
			if err := s.Fail(ctx, ls[0].Ref(), "timeout", ""); err != nil {
				t.Fatal(err)
			}
			if ls, _ := s.Claim(ctx, retry.ClaimParams{N: 1, Lease: time.Minute}); len(ls) != 0 {
				t.Fatal("a failed item was claimable before DueNow")
			}
			res, err := s.DueNow(ctx, "a")
			if err != nil || !res.Moved || res.State != retry.Scheduled || !res.NextAt.Equal(clock.Now()) {
				t.Fatalf("DueNow: %+v %v; want moved to now", res, err)
			}
			if res, err := s.DueNow(ctx, "a"); err != nil || res.Moved {
				t.Fatalf("DueNow again: %+v %v; want nothing to move", res, err)
			}
			ls, err = s.Claim(ctx, retry.ClaimParams{N: 1, Lease: time.Minute})
			if err != nil || len(ls) != 1 {
				t.Fatalf("claim after DueNow: %v %v", ls, err)
			}
			it, err := s.Get(ctx, "a")
			if err != nil || it.Failures != 1 {
				t.Fatalf("after DueNow the item has %d failures (%v); want the 1 it had", it.Failures, err)
			}
			if _, err := s.DueNow(ctx, "missing"); !errors.Is(err, retry.ErrNotFound) {
				t.Fatalf("DueNow of an unknown id: %v", err)
			}
			if _, err := s.DueNow(ctx, ""); !errors.Is(err, retry.ErrInvalid) {
				t.Fatalf("DueNow of an empty id: %v", err)
			}
		})
	}
}
