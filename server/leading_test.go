package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
)

func (f *fixture) leaderView() leaderView {
	f.t.Helper()
	var v leaderView
	decodeInto(f.t, f.do("GET", "/v1/leader", nil), &v)
	return v
}

func TestSQLiteAlwaysLeads(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var v leaderView
	waitfor.True(t, 5*time.Second, "a single SQLite node never led", func() bool {
		v = f.leaderView()
		return v.Leading
	})
	if !v.Elected || v.Term != 1 || v.Node == "" || v.Lease == nil || v.Lease.Term != 1 || v.Lease.ExpiresAt != nil {
		t.Fatalf("leader on SQLite: %+v lease %+v", v, v.Lease)
	}
	var st statusReport
	decodeInto(t, f.do("GET", "/v1/status", nil), &st)
	if !st.Leader.Leading {
		t.Fatalf("status report leader: %+v", st.Leader)
	}
}

func TestWithoutElectorTheServerLeads(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Elector = nil })
	var v leaderView
	waitfor.True(t, 5*time.Second, "a server without elector never led", func() bool {
		v = f.leaderView()
		return v.Leading
	})
	if v.Elected || v.Lease != nil || v.Term != 0 {
		t.Fatalf("leader without elector: %+v", v)
	}
}

// TestLeaderPrunesOldUsage: the leader's maintenance deletes budget usage
// older than the budget keeps.
func TestLeaderPrunesOldUsage(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.MaintainEvery = 10 * time.Millisecond })
	ctx := context.Background()
	day := f.clock.Now().UTC().Truncate(24 * time.Hour)
	if a := f.do("POST", "/v1/budget/admit", map[string]any{"source": "unpaced", "kind": "head_poll"}); a.status != 200 {
		t.Fatalf("admit: %d %s", a.status, a.body)
	}
	if usage, err := f.store.BudgetUsage(ctx, day); err != nil || len(usage) == 0 {
		t.Fatalf("usage of today: %v %v", usage, err)
	}
	f.clock.Advance((budget.DefaultKeepDays + 1) * 24 * time.Hour)
	waitfor.True(t, 10*time.Second, "the old day's usage was never pruned", func() bool {
		usage, err := f.store.BudgetUsage(ctx, day)
		return err == nil && len(usage) == 0
	})
	if m := string(f.do("GET", "/metrics", nil).body); !strings.Contains(m, `hostguard_leader_pruned_rows_total{what="budget"}`) {
		t.Fatal("metrics lack the pruned rows")
	}
}

// TestOnlyTheLeaderPolls runs two nodes on one PostgreSQL with the same
// feed: one leads and polls, the other follows and shows the shared
// position; when the leader stops, the follower takes over without
// polling a head its predecessor has just read.
func TestOnlyTheLeaderPolls(t *testing.T) {
	t.Parallel()
	dsn := storetest.PostgresDSN(t)
	x, _ := newFakeIndexer(t, testAPIKey, 4)
	node := func(name string) *fixture {
		st, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		return serveOn(t, st, newFakeClock(), withFeed(x), func(c *Config) {
			// A lease long enough that a loaded machine does not let it
			// lapse between two reads of the test; the stopped leader
			// resigns, so the takeover below does not wait for it.
			el, err := leader.New(st, leader.Config{NodeID: name, LeaseFor: 3 * time.Second, Logger: c.Logger})
			if err != nil {
				t.Fatal(err)
			}
			c.Elector = el
		})
	}
	a, b := node("node-a"), node("node-b")

	var first, second *fixture
	waitfor.True(t, 10*time.Second, "nobody led", func() bool {
		switch {
		case a.leaderView().Leading:
			first, second = a, b
		case b.leaderView().Leading:
			first, second = b, a
		}
		return first != nil
	})
	lv, fv := first.leaderView(), second.leaderView()
	if fv.Leading || fv.Term != 0 || lv.Lease == nil || lv.Lease.Holder != lv.Node || lv.Term != lv.Lease.Term || lv.Lease.ExpiresAt == nil {
		t.Fatalf("leader %+v (lease %+v), follower %+v", lv, lv.Lease, fv)
	}
	first.waitSynced("fake")

	// The follower sees the shared position, but has polled nothing.
	resp, v, _ := second.feedNamed("fake")
	if resp.Leading || v.Leading || !v.Synced || v.ItemsTotal != 4 || v.LastSync != nil || v.ItemsSeen != 0 {
		t.Fatalf("follower's view: leading %v, %+v", resp.Leading, v)
	}
	if m := string(second.do("GET", "/metrics", nil).body); !strings.Contains(m, "hostguard_leader_leading 0") {
		t.Error("the follower's metrics do not say it follows")
	}

	// The leader stops; the follower takes over.
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	var nv leaderView
	waitfor.True(t, 10*time.Second, "the follower never took over", func() bool {
		nv = second.leaderView()
		return nv.Leading
	})
	if nv.Term <= lv.Term {
		t.Fatalf("the new leader's term %d is not above %d", nv.Term, lv.Term)
	}
	// The new leader starts from the stored position: its next head poll
	// is an interval after the last one, not now.
	waitfor.True(t, 10*time.Second, "the new leader's loop never scheduled the feed", func() bool {
		_, v, _ = second.feedNamed("fake")
		return v.Leading && v.NextHeadPoll != nil
	})
	if !v.NextHeadPoll.After(second.clock.Now().Add(20*time.Minute)) || x.Count("search") != 1 {
		t.Fatalf("new leader: next poll %v, indexer searches %d", v.NextHeadPoll, x.Count("search"))
	}
}

// TestLeaderRetentionIsReported: done items older than KeepDone go, and
// both the cluster-wide counter with its time and this node's count of
// deleted rows say so; items that are not done stay.
func TestLeaderRetentionIsReported(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.MaintainEvery = 10 * time.Millisecond })
	ctx := context.Background()
	sched := f.s.cfg.Retry
	metric := func(name string) string {
		for line := range strings.SplitSeq(string(f.do("GET", "/metrics", nil).body), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				return v
			}
		}
		return "absent"
	}
	if got, at := metric("hostguard_retry_pruned_items_total"), metric("hostguard_retry_last_prune_timestamp_seconds"); got != "0" || at != "0" {
		t.Fatalf("before retention: pruned %s at %s; want 0 and 0", got, at)
	}
	if _, err := sched.Add(ctx, retry.NewItem{ID: "done"}, retry.NewItem{ID: "waiting", NotBefore: f.clock.Now().Add(90 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ls, err := sched.Claim(ctx, retry.ClaimParams{N: 1, Lease: time.Minute, Worker: "w"})
	if err != nil || len(ls) != 1 || ls[0].ID != "done" {
		t.Fatalf("claim: %v %v", ls, err)
	}
	if err := sched.Succeed(ctx, ls[0].Ref()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(retry.DefaultKeepDone + time.Hour)
	var st retry.Stats
	waitfor.True(t, 10*time.Second, "the old done item was never pruned", func() bool {
		st, err = sched.Stats(ctx)
		return err == nil && st.Pruned == 1
	})
	if st.Total != 1 || st.ByState["scheduled"]+st.ByState["pending"] != 1 || !st.PrunedAt.Equal(f.clock.Now()) {
		t.Fatalf("stats after retention: %+v", st)
	}
	if got := metric("hostguard_retry_pruned_items_total"); got != "1" {
		t.Fatalf("hostguard_retry_pruned_items_total %s; want 1", got)
	}
	if got, want := metric("hostguard_retry_last_prune_timestamp_seconds"), strconv.FormatFloat(unixSeconds(st.PrunedAt), 'g', -1, 64); got != want {
		t.Fatalf("hostguard_retry_last_prune_timestamp_seconds %s; want %s", got, want)
	}
	if got := metric(`hostguard_leader_pruned_rows_total{what="retry"}`); got != "1" {
		t.Fatalf(`hostguard_leader_pruned_rows_total{what="retry"} %s; want 1`, got)
	}
}
