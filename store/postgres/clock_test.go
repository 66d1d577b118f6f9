package postgres_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
)

// nodeClock is the clock the capabilities of a node whose own clock is
// local run on: the cluster's clock, which reads the database's and
// measures only elapsed time on the node's.
func nodeClock(st *postgres.Store, local func() time.Time) func() time.Time {
	return postgres.NewClusterClock(st, local)
}

func openPG(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Two nodes share one database. Node A runs on the defaults (the store's
// cluster clock); node B's own clock jumps an hour forward and back.
// Neither direction may let B take a live lease (an item's or the
// leader's), hold work back, end a host's backoff early, or stall a
// source's pacing.
func TestNodeClockJumpsDecideNothing(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	ctx := context.Background()
	stA, stB := openPG(t, dsn), openPG(t, dsn)
	start := time.Now()
	clkB := clocktest.New(start)
	nowB := nodeClock(stB, clkB.Now)

	retryA, err := retry.New(stA, retry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	retryB, err := retry.New(stB, retry.Config{Now: nowB})
	if err != nil {
		t.Fatal(err)
	}
	claim := func(s *retry.Scheduler) []retry.Lease {
		t.Helper()
		ls, err := s.Claim(ctx, retry.ClaimParams{N: 10, Lease: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}

	t.Run("item leases", func(t *testing.T) {
		if _, err := retryA.Add(ctx, retry.NewItem{ID: "a-holds"}); err != nil {
			t.Fatal(err)
		}
		if ls := claim(retryA); len(ls) != 1 {
			t.Fatalf("A claimed %d items; want 1", len(ls))
		}
		clkB.Set(start.Add(time.Hour))
		if ls := claim(retryB); len(ls) != 0 {
			t.Fatalf("B, its clock an hour ahead, took %s while A's 10-minute lease runs", ls[0].ID)
		}
		// Work B adds while ahead is due at once for everyone.
		if _, err := retryB.Add(ctx, retry.NewItem{ID: "b-added"}); err != nil {
			t.Fatal(err)
		}
		if ls := claim(retryA); len(ls) != 1 || ls[0].ID != "b-added" {
			t.Fatalf("A claimed %v; want b-added, due at once though B's clock ran an hour ahead when it was added", ids(ls))
		}
		clkB.Set(start.Add(-time.Hour))
		if _, err := retryA.Add(ctx, retry.NewItem{ID: "b-holds"}); err != nil {
			t.Fatal(err)
		}
		if ls := claim(retryB); len(ls) != 1 || ls[0].ID != "b-holds" {
			t.Fatalf("B claimed %v; want b-holds", ids(ls))
		}
		if ls := claim(retryA); len(ls) != 0 {
			t.Fatalf("A took %v from B's 10-minute lease, granted while B's clock ran an hour behind", ids(ls))
		}
	})

	t.Run("leader lease", func(t *testing.T) {
		const name = "jumps"
		campaign := func(st *postgres.Store, node string, now time.Time) (leader.Lease, bool) {
			t.Helper()
			l, won, err := st.LeaderCampaign(ctx, leader.StoreCampaignParams{Name: name, Node: node, Now: now, LeaseFor: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			return l, won
		}
		la, won := campaign(stA, "a", stA.ClusterNow())
		if !won {
			t.Fatalf("A lost a free election: %+v", la)
		}
		clkB.Set(start.Add(time.Hour))
		if l, won := campaign(stB, "b", nowB()); won {
			t.Fatalf("B, its clock an hour ahead, took the lease A holds for a minute: %+v", l)
		}
		if err := stA.LeaderResign(ctx, leader.StoreResignParams{Name: name, Node: "a", Term: la.Term, Now: stA.ClusterNow()}); err != nil {
			t.Fatal(err)
		}
		clkB.Set(start.Add(-time.Hour))
		if l, won := campaign(stB, "b", nowB()); !won {
			t.Fatalf("B lost a free election: %+v", l)
		}
		if l, won := campaign(stA, "a", stA.ClusterNow()); won {
			t.Fatalf("A took the lease B holds for a minute, granted while B's clock ran an hour behind: %+v", l)
		}
	})

	t.Run("host backoffs", func(t *testing.T) {
		cfg := health.Config{Schedule: []time.Duration{10 * time.Minute}, OutageAfter: -1}
		healthA, err := health.New(stA, cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Now = nowB
		healthB, err := health.New(stB, cfg)
		if err != nil {
			t.Fatal(err)
		}
		available := func(tr *health.Tracker, name string) bool {
			t.Helper()
			ok, err := tr.Available(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		clkB.Set(start)
		if err := healthA.Touch(ctx, "a-failed", false); err != nil {
			t.Fatal(err)
		}
		clkB.Set(start.Add(time.Hour))
		if available(healthB, "a-failed") {
			t.Fatal("B, its clock an hour ahead, finds a-failed available during the 10-minute backoff A recorded")
		}
		clkB.Set(start.Add(-time.Hour))
		if err := healthB.Touch(ctx, "b-failed", false); err != nil {
			t.Fatal(err)
		}
		if available(healthA, "b-failed") {
			t.Fatal("A finds b-failed available during the 10-minute backoff B recorded with its clock an hour behind")
		}
	})

	t.Run("pacing", func(t *testing.T) {
		const pace = 100 * time.Millisecond
		cfg := budget.Config{Sources: []budget.Source{{Name: "idx", Pace: pace}}}
		budgetA, err := budget.New(stA, cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Now = nowB
		budgetB, err := budget.New(stB, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// A wait that the pace explains is fine; one that a clock's
		// jump explains (an hour) is refused at once under this deadline.
		wait := func(b *budget.Budget, who string) {
			t.Helper()
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, err := b.Wait(wctx, budget.AdmitParams{Source: "idx", Kind: budget.KindSearch}); err != nil {
				t.Fatalf("%s: %v", who, err)
			}
		}
		clkB.Set(start)
		wait(budgetA, "A")
		clkB.Set(start.Add(-time.Hour))
		wait(budgetB, "B, its clock gone an hour back")
		clkB.Set(start.Add(time.Hour))
		wait(budgetB, "B, its clock an hour ahead")
		wait(budgetA, "A, after B paced the source with its clock an hour ahead")
	})
}

func ids(ls []retry.Lease) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.ID)
	}
	return out
}

// The cluster clock reads the database's clock: a node whose own clock is
// an hour off from its start reads the same time as one that is right.
func TestClusterClockIsTheDatabasesClock(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	st := openPG(t, dsn)
	for _, off := range []time.Duration{time.Hour, -time.Hour} {
		clk := clocktest.New(time.Now().Add(off))
		now := nodeClock(st, clk.Now)
		var db time.Time
		before := st.ClusterNow()
		if err := st.Pool().QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&db); err != nil {
			t.Fatal(err)
		}
		got := now()
		if d := got.Sub(db); d < -time.Second || d > time.Second {
			t.Errorf("node %v off: cluster clock %v, database %v", off, got, db)
		}
		if d := got.Sub(before); d < -time.Second || d > time.Second {
			t.Errorf("node %v off: cluster clock %v, the store's own %v", off, got, before)
		}
	}
}

// A capability whose Config leaves Now unset stamps times by the store's
// cluster clock, not by the node's: with the database's clock an hour
// ahead of this node's, every time it stamps is an hour ahead too.
func TestCapabilitiesDefaultToTheClusterClock(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	ctx := context.Background()
	st := openPG(t, dsn)
	postgres.ShiftClusterClock(st, time.Hour)
	near := func(what string, got time.Time, ahead time.Duration) {
		t.Helper()
		want := time.Now().Add(time.Hour + ahead)
		if d := got.Sub(want); d < -time.Minute || d > time.Minute {
			t.Errorf("%s: %v; want about %v, by the database's clock", what, got, want)
		}
	}

	sched, err := retry.New(st, retry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sched.Add(ctx, retry.NewItem{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	ls, err := sched.Claim(ctx, retry.ClaimParams{N: 1, Lease: 10 * time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v, %v", ids(ls), err)
	}
	near("retry: the lease's end", ls[0].Until, 10*time.Minute)

	b, err := budget.New(st, budget.Config{Sources: []budget.Source{{Name: "idx", Pace: budget.NoPace}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.Admit(ctx, budget.AdmitParams{Source: "idx", Kind: budget.KindSearch})
	if err != nil {
		t.Fatal(err)
	}
	near("budget: the grant", g.At, 0)

	tr, err := health.New(st, health.Config{Schedule: []time.Duration{10 * time.Minute}, OutageAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tr.TouchResult(ctx, "h", false)
	if err != nil {
		t.Fatal(err)
	}
	near("health: the backoff's end", r.BackoffUntil, 10*time.Minute)

	el, err := leader.New(st, leader.Config{LeaseFor: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	led := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- el.Run(rctx, func(ctx context.Context) error {
			close(led)
			<-ctx.Done()
			return nil
		})
	}()
	<-led
	l, err := el.Current(ctx)
	cancel()
	if rerr := <-done; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	near("leader: the lease's end", l.ExpiresAt, time.Minute)
	near("leader: the clock /readyz reads the lease by", el.Now(), 0)
}
