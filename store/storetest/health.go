package storetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/health"
)

// healthT0 is a fixed instant with microsecond detail, so that a store that
// drops or rounds sub-second precision fails the comparisons.
var healthT0 = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

// healthTouch is a touch through the store seam that fails the test on error.
func healthTouch(t testing.TB, st health.Store, name string, o health.Outcome, now time.Time, sched []time.Duration) health.Record {
	t.Helper()
	rec, err := st.HealthTouch(ctx(t), health.StoreTouchParams{
		Name: name, Display: name, Outcome: o, Now: now, Schedule: sched,
	})
	if err != nil {
		t.Fatalf("HealthTouch(%q, %v): %v", name, o, err)
	}
	return rec
}

func healthGet(t testing.TB, st health.Store, name string) health.Record {
	t.Helper()
	rec, found, err := st.HealthGet(ctx(t), name)
	if err != nil || !found {
		t.Fatalf("HealthGet(%q) = found %v, %v; want the record", name, found, err)
	}
	return rec
}

func blocked(t testing.TB, st health.Store, names []string, view health.View, now time.Time) []string {
	t.Helper()
	out, err := st.HealthBlocked(ctx(t), health.StoreBlockedParams{Names: names, View: view, Now: now})
	if err != nil {
		t.Fatalf("HealthBlocked(%s): %v", view, err)
	}
	slices.Sort(out)
	return out
}

func listNames(t testing.TB, st health.Store, p health.StoreListParams) []string {
	t.Helper()
	recs, err := st.HealthList(ctx(t), p)
	if err != nil {
		t.Fatalf("HealthList(%+v): %v", p, err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Name
	}
	return out
}

func testHealth(t *testing.T, newHarness NewFunc) {
	sched := health.DefaultSchedule

	t.Run("unknown name", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		if _, found, err := st.HealthGet(ctx(t), "nobody.example"); err != nil || found {
			t.Fatalf("HealthGet(unknown) found=%v err=%v; want not found, nil", found, err)
		}
		for _, v := range []health.View{health.Healthy, health.Available} {
			if got := blocked(t, st, []string{"nobody.example"}, v, healthT0); len(got) != 0 {
				t.Errorf("HealthBlocked(%s) of an unknown name = %v; want none", v, got)
			}
		}
		if got := listNames(t, st, health.StoreListParams{View: health.All, Limit: 10, Now: healthT0}); len(got) != 0 {
			t.Errorf("HealthList on an empty store = %v", got)
		}
		if c, err := st.HealthCounts(ctx(t), healthT0); err != nil || c != (health.Counts{}) {
			t.Errorf("HealthCounts on an empty store = %+v, %v", c, err)
		}
		if del, err := st.HealthDelete(ctx(t), "nobody.example"); err != nil || del {
			t.Errorf("HealthDelete(unknown) = %v, %v; want false, nil", del, err)
		}
	})

	t.Run("failure streak follows the schedule and the last step repeats", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		for n := 1; n <= len(sched)+3; n++ {
			now := healthT0.Add(time.Duration(n) * time.Minute)
			rec := healthTouch(t, st, "a.example", health.Failure, now, sched)
			want := now.Add(sched[min(n, len(sched))-1])
			if rec.ConsecutiveFails != n || !rec.BackoffUntil.Equal(want) || !rec.LastFailure.Equal(now) || rec.Failures != int64(n) {
				t.Fatalf("failure %d: got fails=%d backoff=%v last=%v total=%d; want %d, %v, %v, %d",
					n, rec.ConsecutiveFails, rec.BackoffUntil, rec.LastFailure, rec.Failures, n, want, now, n)
			}
			if rec.Successes != 0 || rec.IgnoredFailures != 0 || !rec.LastSuccess.IsZero() {
				t.Fatalf("failure %d touched success fields: %+v", n, rec)
			}
		}
		okAt := healthT0.Add(time.Hour)
		rec := healthTouch(t, st, "a.example", health.Success, okAt, nil)
		if rec.ConsecutiveFails != 0 || !rec.BackoffUntil.IsZero() || !rec.LastSuccess.Equal(okAt) ||
			rec.Successes != 1 || rec.Failures != int64(len(sched)+3) {
			t.Fatalf("after success: %+v; want streak 0, no backoff, last success %v, 1 success, %d failures", rec, okAt, len(sched)+3)
		}
		again := okAt.Add(time.Second)
		rec = healthTouch(t, st, "a.example", health.Failure, again, sched)
		if rec.ConsecutiveFails != 1 || !rec.BackoffUntil.Equal(again.Add(sched[0])) {
			t.Fatalf("a failure after a success must restart the ladder: %+v", rec)
		}
		if got := healthGet(t, st, "a.example"); got != rec {
			t.Fatalf("HealthGet = %+v; want what the touch returned, %+v", got, rec)
		}
	})

	t.Run("a custom schedule is read from the parameters", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		short := []time.Duration{time.Millisecond, 1500 * time.Microsecond}
		for n, want := range []time.Duration{time.Millisecond, 1500 * time.Microsecond, 1500 * time.Microsecond} {
			rec := healthTouch(t, st, "b.example", health.Failure, healthT0, short)
			if !rec.BackoffUntil.Equal(healthT0.Add(want)) {
				t.Fatalf("failure %d: backoff until %v; want %v", n+1, rec.BackoffUntil, healthT0.Add(want))
			}
		}
	})

	t.Run("an ignored failure changes only the failure record", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		healthTouch(t, st, "c.example", health.Failure, healthT0, sched)
		before := healthTouch(t, st, "c.example", health.Failure, healthT0.Add(time.Second), sched)
		later := healthT0.Add(time.Minute)
		rec := healthTouch(t, st, "c.example", health.IgnoredFailure, later, sched)
		if rec.ConsecutiveFails != before.ConsecutiveFails || !rec.BackoffUntil.Equal(before.BackoffUntil) {
			t.Fatalf("ignored failure changed the streak or backoff: before %+v, after %+v", before, rec)
		}
		if !rec.LastFailure.Equal(later) || rec.Failures != 3 || rec.IgnoredFailures != 1 {
			t.Fatalf("ignored failure: last=%v failures=%d ignored=%d; want %v, 3, 1", rec.LastFailure, rec.Failures, rec.IgnoredFailures, later)
		}
		fresh := healthTouch(t, st, "d.example", health.IgnoredFailure, later, sched)
		if fresh.ConsecutiveFails != 0 || !fresh.BackoffUntil.IsZero() || fresh.Failures != 1 || fresh.IgnoredFailures != 1 {
			t.Fatalf("ignored failure of a new name: %+v; want a healthy record with one ignored failure", fresh)
		}
	})

	t.Run("display form is the first seen", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		p := health.StoreTouchParams{Name: "e.example", Display: "E.Example", Outcome: health.Success, Now: healthT0}
		if _, err := st.HealthTouch(ctx(t), p); err != nil {
			t.Fatal(err)
		}
		p.Display = "E.EXAMPLE"
		rec, err := st.HealthTouch(ctx(t), p)
		if err != nil || rec.Display != "E.Example" || rec.Name != "e.example" {
			t.Fatalf("second touch: %+v, %v; want display E.Example kept", rec, err)
		}
	})

	t.Run("times round-trip in UTC and never move back", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		st := h.Open(t)
		zone := time.FixedZone("UTC+5:30", 5*3600+1800)
		at := healthT0.In(zone)
		healthTouch(t, st, "f.example", health.Success, at, nil)
		healthTouch(t, st, "f.example", health.Success, at.Add(-time.Hour), nil)
		healthTouch(t, st, "f.example", health.Failure, at, sched)
		healthTouch(t, st, "f.example", health.IgnoredFailure, at.Add(-time.Hour), sched)
		rec := healthGet(t, h.Open(t), "f.example")
		if !rec.LastSuccess.Equal(healthT0) || !rec.LastFailure.Equal(healthT0) {
			t.Fatalf("last success %v, last failure %v; want both %v (an older report must not move them back)",
				rec.LastSuccess, rec.LastFailure, healthT0)
		}
		for _, tm := range []time.Time{rec.LastSuccess, rec.LastFailure, rec.BackoffUntil} {
			if tm.Location() != time.UTC {
				t.Errorf("time %v is in %v; want UTC", tm, tm.Location())
			}
		}
	})

	t.Run("blocked names per view in one call", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		now := healthT0.Add(time.Hour)
		var names, wantHealthy, wantAvailable []string
		for i := range 100 {
			name := fmt.Sprintf("host-%03d.example", i)
			names = append(names, name)
			switch i % 4 {
			case 0: // unknown
			case 1:
				healthTouch(t, st, name, health.Success, now.Add(-time.Minute), nil)
			case 2: // failed long ago: unhealthy but available again
				healthTouch(t, st, name, health.Failure, now.Add(-time.Minute), sched)
				wantHealthy = append(wantHealthy, name)
			case 3: // backoff ends exactly now: available
				healthTouch(t, st, name, health.Failure, now.Add(-sched[0]), sched)
				healthTouch(t, st, name, health.Failure, now.Add(-sched[1]), sched)
				wantHealthy = append(wantHealthy, name)
			}
		}
		healthTouch(t, st, "host-099.example", health.Failure, now, sched) // in backoff now
		wantAvailable = []string{"host-099.example"}
		if got := blocked(t, st, names, health.Healthy, now); !slices.Equal(got, wantHealthy) {
			t.Errorf("blocked by the healthy view = %v; want %v", got, wantHealthy)
		}
		if got := blocked(t, st, names, health.Available, now); !slices.Equal(got, wantAvailable) {
			t.Errorf("blocked by the available view = %v; want %v", got, wantAvailable)
		}
		var endingNow []string // case 3, host-099 among them
		for i := 3; i < 100; i += 4 {
			endingNow = append(endingNow, names[i])
		}
		if got := blocked(t, st, names, health.Available, now.Add(-time.Microsecond)); !slices.Equal(got, endingNow) {
			t.Errorf("a microsecond earlier the names in backoff are %v; want %v", got, endingNow)
		}
		if got := blocked(t, st, nil, health.Healthy, now); len(got) != 0 {
			t.Errorf("blocked of no names = %v", got)
		}
		odd := []string{`q"uote.example`, `back\slash.example`, "ünïcode.example", "<amp&>.example"}
		for _, n := range odd {
			healthTouch(t, st, n, health.Failure, now, sched)
		}
		slices.Sort(odd)
		if got := blocked(t, st, append(odd, "x.example"), health.Healthy, now); !slices.Equal(got, odd) {
			t.Errorf("names with quotes, backslashes, non-ASCII: blocked %v; want %v", got, odd)
		}
	})

	t.Run("list by view with paging, and counts", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		now := healthT0.Add(time.Hour)
		healthTouch(t, st, "ok-1", health.Success, now, nil)
		healthTouch(t, st, "ok-2", health.IgnoredFailure, now, sched)
		healthTouch(t, st, "expired-1", health.Failure, now.Add(-time.Hour), sched)
		healthTouch(t, st, "expired-2", health.Failure, now.Add(-sched[0]), sched)
		healthTouch(t, st, "backoff-1", health.Failure, now, sched)
		healthTouch(t, st, "backoff-2", health.Failure, now.Add(-time.Second), sched)
		cases := map[health.View][]string{
			health.All:       {"backoff-1", "backoff-2", "expired-1", "expired-2", "ok-1", "ok-2"},
			health.Healthy:   {"ok-1", "ok-2"},
			health.Unhealthy: {"backoff-1", "backoff-2", "expired-1", "expired-2"},
			health.Available: {"expired-1", "expired-2", "ok-1", "ok-2"},
			health.Backoff:   {"backoff-1", "backoff-2"},
		}
		for view, want := range cases {
			if got := listNames(t, st, health.StoreListParams{View: view, Limit: 100, Now: now}); !slices.Equal(got, want) {
				t.Errorf("list %s = %v; want %v", view, got, want)
			}
			var paged []string
			for after, pages := "", 0; pages <= len(want); pages++ {
				page := listNames(t, st, health.StoreListParams{View: view, Limit: 2, After: after, Now: now})
				if len(page) > 2 {
					t.Fatalf("list %s page of limit 2 has %d names", view, len(page))
				}
				if len(page) == 0 {
					break
				}
				paged = append(paged, page...)
				after = page[len(page)-1]
			}
			if !slices.Equal(paged, want) {
				t.Errorf("list %s in pages of 2 = %v; want %v", view, paged, want)
			}
		}
		c, err := st.HealthCounts(ctx(t), now)
		if err != nil || c != (health.Counts{Known: 6, Unhealthy: 4, Backoff: 2}) {
			t.Errorf("counts = %+v, %v; want 6 known, 4 unhealthy, 2 in backoff", c, err)
		}
	})

	t.Run("delete forgets a name", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		healthTouch(t, st, "g.example", health.Failure, healthT0, sched)
		if del, err := st.HealthDelete(ctx(t), "g.example"); err != nil || !del {
			t.Fatalf("HealthDelete = %v, %v; want true", del, err)
		}
		if _, found, err := st.HealthGet(ctx(t), "g.example"); err != nil || found {
			t.Fatalf("after delete found=%v err=%v", found, err)
		}
		if rec := healthTouch(t, st, "g.example", health.Failure, healthT0, sched); rec.ConsecutiveFails != 1 || rec.Failures != 1 {
			t.Fatalf("a deleted name must start afresh: %+v", rec)
		}
	})

	t.Run("bad parameters are errors", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		bad := []health.StoreTouchParams{
			{Name: "", Display: "", Outcome: health.Success, Now: healthT0},
			{Name: "h.example", Display: "h.example", Outcome: health.Failure, Now: healthT0},
			{Name: "h.example", Display: "h.example", Outcome: health.Outcome(99), Now: healthT0},
		}
		for _, p := range bad {
			if _, err := st.HealthTouch(ctx(t), p); err == nil {
				t.Errorf("HealthTouch(%+v): want an error", p)
			}
		}
		if _, found, _ := st.HealthGet(ctx(t), "h.example"); found {
			t.Error("a rejected touch created a record")
		}
		if _, err := st.HealthBlocked(ctx(t), health.StoreBlockedParams{Names: []string{"x"}, View: health.All, Now: healthT0}); err == nil {
			t.Error("HealthBlocked with view all: want an error")
		}
		if _, err := st.HealthList(ctx(t), health.StoreListParams{View: "sideways", Limit: 1, Now: healthT0}); err == nil {
			t.Error("HealthList with an unknown view: want an error")
		}
		if _, err := st.HealthList(ctx(t), health.StoreListParams{View: health.All, Limit: 0, Now: healthT0}); err == nil {
			t.Error("HealthList with limit 0: want an error")
		}
	})

	t.Run("state survives closing and reopening", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		first := h.Open(t)
		healthTouch(t, first, "i.example", health.Success, healthT0, nil)
		healthTouch(t, first, "i.example", health.Failure, healthT0.Add(time.Second), sched)
		want := healthTouch(t, first, "i.example", health.Failure, healthT0.Add(2*time.Second), sched)
		if err := first.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		if got := healthGet(t, h.Open(t), "i.example"); got != want {
			t.Fatalf("after reopening: %+v; want %+v", got, want)
		}
	})

	t.Run("concurrent touches from two nodes lose nothing", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		nodes := []health.Store{h.Open(t), h.Open(t)}
		const perNode, each = 4, 40
		total := len(nodes) * perNode * each
		// A ladder with a distinct step per streak length, so that a
		// backoff computed from a stale streak cannot pass for a fresh one.
		ladder := make([]time.Duration, 64)
		for i := range ladder {
			ladder[i] = time.Duration(i+1) * time.Second
		}
		var (
			mu      sync.Mutex
			streaks []int
			wg      sync.WaitGroup
			errs    = make(chan error, total)
		)
		for _, node := range nodes {
			for g := range perNode {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						ok := (g+i)%3 == 0
						o := health.Failure
						if ok {
							o = health.Success
						}
						c := context.Background()
						if _, err := node.HealthTouch(c, health.StoreTouchParams{
							Name: "mixed", Display: "mixed", Outcome: o, Now: healthT0, Schedule: ladder,
						}); err != nil {
							errs <- err
							return
						}
						rec, err := node.HealthTouch(c, health.StoreTouchParams{
							Name: "shared", Display: "shared", Outcome: health.Failure, Now: healthT0, Schedule: ladder,
						})
						if err != nil {
							errs <- err
							return
						}
						if want := healthT0.Add(health.BackoffFor(ladder, rec.ConsecutiveFails)); !rec.BackoffUntil.Equal(want) {
							errs <- fmt.Errorf("streak %d got backoff until %v; want %v", rec.ConsecutiveFails, rec.BackoffUntil, want)
							return
						}
						mu.Lock()
						streaks = append(streaks, rec.ConsecutiveFails)
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		slices.Sort(streaks)
		for i, s := range streaks {
			if s != i+1 {
				t.Fatalf("the streaks the writes returned are not exactly 1..%d: position %d holds %d", total, i, s)
			}
		}
		shared := healthGet(t, nodes[0], "shared")
		if shared.ConsecutiveFails != total || shared.Failures != int64(total) {
			t.Fatalf("shared: streak %d, failures %d; want %d each", shared.ConsecutiveFails, shared.Failures, total)
		}
		var wantOK int64
		for g := range perNode {
			for i := range each {
				if (g+i)%3 == 0 {
					wantOK++
				}
			}
		}
		wantOK *= int64(len(nodes))
		mixed := healthGet(t, nodes[1], "mixed")
		if mixed.Successes != wantOK || mixed.Failures != int64(total)-wantOK {
			t.Fatalf("mixed: %d successes, %d failures; want %d and %d", mixed.Successes, mixed.Failures, wantOK, int64(total)-wantOK)
		}
	})
}

// testHealthStrings sends every bad text, and names that would carry a
// credential, through a Tracker and checks that each is refused with the
// same error on every engine and that no record is created.
func testHealthStrings(t *testing.T, newHarness NewFunc) {
	t.Parallel()
	st := newHarness(t).Open(t)
	tr, err := health.New(st, health.Config{Now: func() time.Time { return healthT0 }, OutageAfter: -1,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// text marks the cases that are bad text, which a List cursor
	// (after) refuses as well; the others are bad only as host names.
	type bad struct {
		what, s, reason string
		text            bool
	}
	cases := []bad{}
	for _, b := range badTexts {
		cases = append(cases, bad{b.what, b.s, b.reason, true})
	}
	cases = append(cases,
		bad{"userinfo", "user:PASSW0RD@h.example", "contains '@' (userinfo); use the host name", false},
		bad{"query", "h.example?apikey=SECRET123", "contains '?' (a query); use the host name", false},
		bad{"encoded userinfo", "user%3APASSW0RD%40h.example", "contains '%' (an encoded character); use the host name as it is", false},
		bad{"URL with userinfo", "https://user:PASSW0RD@h.example/", "contains '@' (userinfo); use the host name", false},
		bad{"inner space", "h .example", "contains white space; use the host name", false},
	)
	for _, c := range cases {
		calls := []struct {
			field string
			call  func() error
		}{
			{"name", func() error { return tr.Touch(ctx(t), c.s, false) }},
			{"name", func() error { return tr.Touch(ctx(t), c.s, true) }},
			{"name", func() error { _, err := tr.Status(ctx(t), c.s); return err }},
			{"name", func() error { _, err := tr.Reset(ctx(t), c.s); return err }},
			{"names[1]", func() error {
				_, _, err := tr.Filter(ctx(t), []string{"ok.example", c.s}, health.Available)
				return err
			}},
		}
		if c.text {
			calls = append(calls, struct {
				field string
				call  func() error
			}{"after", func() error { _, err := tr.List(ctx(t), health.ListParams{After: c.s}); return err }})
		}
		for i, call := range calls {
			err := call.call()
			want := "health: " + call.field + ": " + c.reason
			if err == nil || err.Error() != want || !errors.Is(err, health.ErrInvalid) {
				t.Errorf("%s, call %d: %v; want %q matching ErrInvalid", c.what, i, err, want)
			}
			if err != nil && (strings.Contains(err.Error(), "PASSW0RD") || strings.Contains(err.Error(), "SECRET123")) {
				t.Errorf("%s: the error repeats the secret: %v", c.what, err)
			}
		}
	}
	if n := listNames(t, st, health.StoreListParams{View: health.All, Limit: 100, Now: healthT0}); len(n) != 0 {
		t.Errorf("refused names were stored: %q", n)
	}
}
