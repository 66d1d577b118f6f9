package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/retry/retrydriver"
)

// listAll pages through s.List with p until the last page, failing on a
// repeated id or a page out of id order.
func listAll(t *testing.T, s *retry.Scheduler, p retry.ListParams) (got []string, pages int) {
	t.Helper()
	seen := map[string]bool{}
	for pages = 1; pages < 1000; pages++ {
		page, err := s.List(ctx(t), p)
		if err != nil {
			t.Fatalf("List(%+v): %v", p, err)
		}
		for _, it := range page.Items {
			if seen[it.ID] {
				t.Fatalf("List: %q on two pages", it.ID)
			}
			if len(got) > 0 && it.ID <= got[len(got)-1] {
				t.Fatalf("List: %q after %q", it.ID, got[len(got)-1])
			}
			if it.Payload != nil {
				t.Fatalf("List: %q carries its payload", it.ID)
			}
			seen[it.ID] = true
			got = append(got, it.ID)
		}
		if page.Next == "" {
			return got, pages
		}
		p.After = page.Next
	}
	t.Fatal("List: no last page after 1000 pages")
	return nil, 0
}

func testRetryList(t *testing.T, newHarness NewFunc) {
	t.Run("filters and pages", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		t0 := e.clock.Now()
		// 30 items: 10 pending now, 5 pending tomorrow, 15 claimed of which
		// 5 fail with no_peers, 3 fail with timeout, 4 succeed, 3 stay leased.
		var all []string
		for i := range 30 {
			id := fmt.Sprintf("item%02d", i)
			all = append(all, id)
			nb := time.Time{}
			if i >= 10 && i < 15 {
				nb = t0.Add(24 * time.Hour)
			}
			mustAdd(t, e.s, retry.NewItem{ID: id, Payload: []byte("p"), NotBefore: nb})
		}
		leased := mustClaim(t, e.s, 30, time.Hour)
		byState := map[string][]string{}
		classOf := map[string]string{}
		k := 0
		for _, l := range leased {
			var err error
			switch {
			case k < 5:
				err = e.s.Fail(ctx(t), l.Ref(), "no_peers", "")
				byState["scheduled"] = append(byState["scheduled"], l.ID)
				classOf[l.ID] = "no_peers"
			case k < 8:
				err = e.s.Fail(ctx(t), l.Ref(), "timeout", "")
				byState["scheduled"] = append(byState["scheduled"], l.ID)
				classOf[l.ID] = "timeout"
			case k < 12:
				err = e.s.Succeed(ctx(t), l.Ref())
				byState["done"] = append(byState["done"], l.ID)
			case k < 15:
				byState["leased"] = append(byState["leased"], l.ID)
			default:
				err = e.s.Release(ctx(t), l.Ref())
				byState["pending"] = append(byState["pending"], l.ID)
			}
			if err != nil {
				t.Fatal(err)
			}
			k++
		}
		if k != 25 {
			t.Fatalf("claimed %d items, want 25", k)
		}
		byState["pending"] = append(byState["pending"], all[10:15]...)
		for _, v := range byState {
			slices.Sort(v)
		}

		for _, limit := range []int{0, 1, 7, 30, retry.MaxListLimit} {
			got, pages := listAll(t, e.s, retry.ListParams{Limit: limit})
			if !slices.Equal(got, all) {
				t.Errorf("limit %d: listed %v, want %v", limit, got, all)
			}
			if limit == 7 && pages != 5 {
				t.Errorf("limit 7: %d pages for 30 items, want 5", pages)
			}
		}
		for _, state := range retry.States {
			got, _ := listAll(t, e.s, retry.ListParams{States: []retry.State{state}, Limit: 2})
			if want := byState[state.String()]; !slices.Equal(got, want) {
				t.Errorf("state %s: listed %v, want %v", state, got, want)
			}
		}
		got, _ := listAll(t, e.s, retry.ListParams{States: []retry.State{retry.Leased, retry.Done}, Limit: 3})
		if want := slices.Sorted(slices.Values(append(slices.Clone(byState["leased"]), byState["done"]...))); !slices.Equal(got, want) {
			t.Errorf("leased,done: listed %v, want %v", got, want)
		}
		var noPeers []string
		for _, id := range byState["scheduled"] {
			if classOf[id] == "no_peers" {
				noPeers = append(noPeers, id)
			}
		}
		got, _ = listAll(t, e.s, retry.ListParams{Class: "no_peers", Limit: 2})
		if !slices.Equal(got, noPeers) {
			t.Errorf("class no_peers: listed %v, want %v", got, noPeers)
		}
		// Due before an hour from now: the pending items of now (not those of
		// tomorrow); the failures wait for the ladder's first step (30 min).
		var dueHour []string
		for _, id := range byState["pending"] {
			if !slices.Contains(all[10:15], id) {
				dueHour = append(dueHour, id)
			}
		}
		dueHour = slices.Sorted(slices.Values(append(dueHour, byState["scheduled"]...)))
		got, _ = listAll(t, e.s, retry.ListParams{DueBefore: t0.Add(time.Hour), Limit: 4})
		if !slices.Equal(got, dueHour) {
			t.Errorf("due before 1h: listed %v, want %v", got, dueHour)
		}
		got, _ = listAll(t, e.s, retry.ListParams{DueBefore: t0.Add(time.Minute), States: []retry.State{retry.Scheduled}})
		if len(got) != 0 {
			t.Errorf("scheduled due before 1m: listed %v, want none", got)
		}
		page, err := e.s.List(ctx(t), retry.ListParams{States: []retry.State{retry.Leased}, Limit: 1})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("List leased: %+v, %v", page, err)
		}
		if it := page.Items[0]; it.Worker != "w" || it.LeaseUntil.IsZero() || !it.NextAt.IsZero() || it.Attempts != 1 {
			t.Errorf("a leased item is listed as %+v", it)
		}
	})

	t.Run("pages stay true while items come and go", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e.s, ids("b", 10)...)
		page, err := e.s.List(ctx(t), retry.ListParams{Limit: 4})
		if err != nil || len(page.Items) != 4 || page.Next == "" {
			t.Fatalf("first page: %+v, %v", page, err)
		}
		// Before the cursor: never seen; after it: seen; the cursor's own
		// item gone: the walk goes on after it.
		mustAdd(t, e.s, retry.NewItem{ID: "a000"}, retry.NewItem{ID: "b0025"}, retry.NewItem{ID: "c000"})
		if err := e.s.Forget(ctx(t), "b003"); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Forget(ctx(t), "b005"); err != nil {
			t.Fatal(err)
		}
		got, _ := listAll(t, e.s, retry.ListParams{After: page.Next, Limit: 3})
		want := []string{"b004", "b006", "b007", "b008", "b009", "c000"}
		if !slices.Equal(got, want) {
			t.Errorf("after the first page: %v, want %v", got, want)
		}
	})

	t.Run("a walk is bounded", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e.s, ids("s", 9)...)
		st := e.h.Open(t).(retry.Store)
		// Nothing matches: the walk stops after Scan rows and says where.
		q := retrydriver.ListParams{States: []retrydriver.State{retrydriver.Done}, Limit: 5, Scan: 4}
		var lasts []string
		for range 5 {
			res, err := st.RetryList(ctx(t), q)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Records) != 0 || res.More {
				t.Fatalf("RetryList(%+v) = %+v, want nothing", q, res)
			}
			if res.Last == "" {
				break
			}
			lasts = append(lasts, res.Last)
			q.After = res.Last
		}
		if want := []string{"s003", "s007"}; !slices.Equal(lasts, want) {
			t.Errorf("walks stopped at %v, want %v", lasts, want)
		}
		// A full page says there is more only when an item follows.
		res, err := st.RetryList(ctx(t), retrydriver.ListParams{Limit: 9, Scan: 100})
		if err != nil || len(res.Records) != 9 || res.More || res.Last != "" {
			t.Errorf("RetryList(all 9) = %d records, more %v, last %q, %v", len(res.Records), res.More, res.Last, err)
		}
		res, err = st.RetryList(ctx(t), retrydriver.ListParams{Limit: 8, Scan: 100})
		if err != nil || len(res.Records) != 8 || !res.More {
			t.Errorf("RetryList(8 of 9) = %d records, more %v, %v", len(res.Records), res.More, err)
		}
	})

	t.Run("bad parameters", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e.s, ids("x", 3)...)
		before, err := e.s.Stats(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			p     retry.ListParams
			field string
		}{
			{retry.ListParams{Limit: -1}, "limit"},
			{retry.ListParams{Limit: retry.MaxListLimit + 1}, "limit"},
			{retry.ListParams{States: []retry.State{7}}, "state"},
			{retry.ListParams{Class: "a\x00b"}, "class"},
			{retry.ListParams{After: "x001"}, "after"},
			{retry.ListParams{After: "i1.!!"}, "after"},
		} {
			_, err := e.s.List(ctx(t), tt.p)
			var ie *retry.InputError
			if !errors.As(err, &ie) || ie.Field != tt.field || !errors.Is(err, retry.ErrInvalid) {
				t.Errorf("List(%+v) = %v, want an input error on %s", tt.p, err, tt.field)
			}
		}
		if _, err := retry.ParseStates("pending,sleeping"); err == nil || !strings.Contains(err.Error(), `"sleeping"`) {
			t.Errorf("ParseStates(pending,sleeping) = %v", err)
		}
		after, err := e.s.Stats(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if after.Total != before.Total || after.ByState["pending"] != 3 {
			t.Errorf("bad list parameters changed the store: %+v, then %+v", before, after)
		}
	})

	t.Run("due histogram", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		t0 := e.clock.Now()
		empty, err := e.s.Due(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if empty.Waiting != 0 || !empty.OldestDue.IsZero() || len(empty.Buckets) != 6 {
			t.Fatalf("Due on an empty store = %+v", empty)
		}
		at := func(prefix string, n int, d time.Duration) {
			items := ids(prefix, n)
			for i := range items {
				items[i].NotBefore = t0.Add(d)
			}
			mustAdd(t, e.s, items...)
		}
		at("lease", 4, 0)
		// Leased (lease of 10 minutes), one to fail, one to succeed.
		ls := mustClaim(t, e.s, 4, 10*time.Minute)
		if len(ls) != 4 {
			t.Fatalf("claimed %d, want 4", len(ls))
		}
		if err := e.s.Fail(ctx(t), ls[0].Ref(), "no_peers", ""); err != nil { // due in 30 min
			t.Fatal(err)
		}
		if err := e.s.Succeed(ctx(t), ls[1].Ref()); err != nil {
			t.Fatal(err)
		}
		at("now", 3, 0)
		at("h", 2, 20*time.Minute)
		at("d", 5, 5*time.Hour)
		at("w", 1, 3*24*time.Hour)
		at("m", 2, 20*24*time.Hour)
		at("later", 6, 90*24*time.Hour)
		// One of the ready items of now is leased; one more comes due after
		// the last claim, so it is due but not ready.
		mustClaim(t, e.s, 1, time.Minute)
		at("late", 1, 2*time.Second)
		e.clock.Advance(3 * time.Second)
		h, err := e.s.Due(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		var names []string
		for _, b := range h.Buckets {
			got[b.Name] = b.Count
			names = append(names, b.Name)
		}
		if want := []string{"now", "1h", "1d", "7d", "30d", "later"}; !slices.Equal(names, want) {
			t.Fatalf("buckets %v, want %v", names, want)
		}
		want := map[string]int{"now": 2 + 1, "1h": 2 + 1, "1d": 5, "7d": 1, "30d": 2, "later": 6}
		for name, n := range want {
			if got[name] != n {
				t.Errorf("bucket %s = %d, want %d (all: %v)", name, got[name], n, got)
			}
		}
		if h.Waiting != 20 {
			t.Errorf("waiting = %d, want 20", h.Waiting)
		}
		if !h.OldestDue.Equal(t0) {
			t.Errorf("oldest due %v, want %v", h.OldestDue, t0)
		}
		// Nothing due: the oldest is the next to come.
		e2 := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e2.s, retry.NewItem{ID: "far", NotBefore: e2.clock.Now().Add(60 * 24 * time.Hour)})
		h, err = e2.s.Due(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if h.Waiting != 1 || h.Buckets[5].Count != 1 || !h.OldestDue.Equal(e2.clock.Now().Add(60*24*time.Hour)) {
			t.Errorf("Due with one far item = %+v", h)
		}
	})

	t.Run("due and list plans", func(t *testing.T) {
		t.Parallel()
		const waiting = 20_000
		e := newRetryEnv(t, newHarness, retry.Config{})
		batch := make([]retry.NewItem, 0, retry.MaxAdd)
		for i := range waiting {
			batch = append(batch, retry.NewItem{ID: fmt.Sprintf("far%07d", i), NotBefore: e.clock.Now().Add(time.Duration(i) * time.Minute)})
			if len(batch) == cap(batch) {
				mustAdd(t, e.s, batch...)
				batch = batch[:0]
			}
		}
		mustClaim(t, e.s, 1, time.Minute)
		p, ok := e.h.Open(t).(retryListPlanner)
		if !ok {
			t.Fatalf("%s store does not show its due and list plans", e.h.Engine)
		}
		plan, err := p.RetryDuePlan(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"retry_items_wake", "retry_items_claim"} {
			if !strings.Contains(plan, want) {
				t.Errorf("the due plan does not use %s:\n%s", want, plan)
			}
		}
		// Counting must not look up rows. SQLite's plan is fixed; PostgreSQL
		// reads the index alone once the table's visibility map says it may
		// (docs/benchmarks.md shows the plan at 10 million items), which a
		// freshly written test table does not.
		if e.h.Engine == "sqlite" && !strings.Contains(plan, "COVERING INDEX retry_items_wake (next_at>? AND next_at<?)") {
			t.Errorf("the due plan reads rows of retry_items:\n%s", plan)
		}
		lplan, err := p.RetryListPlan(ctx(t), retrydriver.ListParams{States: []retrydriver.State{retrydriver.Scheduled}, After: "far0001000", Limit: 101, Scan: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		for _, scan := range []string{"SCAN retry_items\n", "Seq Scan on retry_items "} {
			if strings.Contains(plan, scan) || strings.Contains(lplan, scan) {
				t.Errorf("a plan scans or sorts the table (%q):\n%s\n%s", scan, plan, lplan)
			}
		}
		t.Logf("%s due plan:\n%s\nlist plan:\n%s", e.h.Engine, plan, lplan)
	})
}

// retryListPlanner is implemented by stores that show their due and list
// plans (both engines).
type retryListPlanner interface {
	RetryDuePlan(ctx context.Context) (string, error)
	RetryListPlan(ctx context.Context, p retrydriver.ListParams) (string, error)
}
