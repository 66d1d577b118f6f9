package retry_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/retry/retrydriver"
	"github.com/hostguard/hostguard/store/storetest"
)

// stalling is a store whose claims wait in it for longer than a lease
// before they commit: the clock moves on while the claim's statement is
// held, as behind a lock, a slow disk or a lost packet.
type stalling struct {
	hostguard.Store
	clock *clocktest.Clock
	stall time.Duration
	after func() // runs once the claim has committed
}

func (s *stalling) RetryClaim(ctx context.Context, p retrydriver.ClaimParams) (retrydriver.ClaimResult, error) {
	s.clock.Advance(s.stall)
	res, err := s.Store.RetryClaim(ctx, p)
	if s.after != nil {
		s.after()
	}
	return res, err
}

func (s *stalling) RetrySucceedClaim(ctx context.Context, p retrydriver.SucceedClaimParams) (retrydriver.SucceedClaimResult, error) {
	s.clock.Advance(s.stall)
	return s.Store.(retrydriver.SucceedClaimer).RetrySucceedClaim(ctx, p)
}

// TestNoLeaseIsBornExpired stalls claims for twice their lease in the
// store: the leases handed out still end a whole lease after the claim
// returned, and another worker gets none of their items meanwhile.
func TestNoLeaseIsBornExpired(t *testing.T) {
	engines := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "h.db") },
		"postgres": func(t *testing.T) string { return storetest.PostgresDSN(t) },
	}
	for name, dsn := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := hostguard.Open(ctx, dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			const lease = 5 * time.Second
			stalled := &stalling{Store: st, clock: clock, stall: 2 * lease}
			slow, err := retry.New(stalled, retry.Config{Now: clock.Now, Jitter: -1})
			if err != nil {
				t.Fatal(err)
			}
			other, err := retry.New(st, retry.Config{Now: clock.Now, Jitter: -1})
			if err != nil {
				t.Fatal(err)
			}
			add := func(id string) {
				t.Helper()
				if _, err := other.Add(ctx, retry.NewItem{ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			add("a")
			check := func(how string, ls []retry.Lease, want int) {
				t.Helper()
				if len(ls) != want {
					t.Fatalf("%s: %d leases, want %d", how, len(ls), want)
				}
				for _, l := range ls {
					if left := l.Until.Sub(clock.Now()); left < lease/2 {
						t.Errorf("%s: lease of %s ends %v after the claim returned; want at least %v", how, l.ID, left, lease/2)
					}
				}
				got, err := other.Claim(ctx, retry.ClaimParams{N: 2, Lease: lease, Worker: "other"})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) > 0 {
					t.Fatalf("%s: another worker got %s, leased by the stalled claim", how, got[0].ID)
				}
			}
			first, err := slow.Claim(ctx, retry.ClaimParams{N: 1, Lease: lease, Worker: "slow"})
			if err != nil {
				t.Fatal(err)
			}
			check("Claim", first, 1)
			add("b")
			next, _, err := slow.SucceedAndClaim(ctx, []retry.LeaseRef{first[0].Ref()}, retry.ClaimParams{N: 1, Lease: lease, Worker: "slow"})
			if err != nil {
				t.Fatal(err)
			}
			check("SucceedAndClaim", next, 1)

			// A worker that claims the stale lease's item before the
			// stalled claim has renewed it keeps it.
			if err := slow.Succeed(ctx, next[0].Ref()); err != nil {
				t.Fatal(err)
			}
			add("c")
			var theirs []retry.Lease
			stalled.after = func() {
				theirs, err = other.Claim(ctx, retry.ClaimParams{N: 1, Lease: lease, Worker: "other"})
				if err != nil {
					t.Error(err)
				}
			}
			late, err := slow.Claim(ctx, retry.ClaimParams{N: 1, Lease: lease, Worker: "slow"})
			if err != nil {
				t.Fatal(err)
			}
			if len(late) != 0 || len(theirs) != 1 || theirs[0].ID != "c" {
				t.Fatalf("the stalled claim returned %v and the other worker got %v; want none and c", late, theirs)
			}
		})
	}
}
