package feed_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/feed/newznab"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/fakeindexer"
	"github.com/hostguard/hostguard/internal/sqlitetest"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/hostguard/hostguard/transport"
)

// These tests run the Syncer against the fake indexer over HTTP on
// 127.0.0.1, through the Newznab client and the guarded transport.

const apiKey = "feedtest-key-0001"

func indexerClient(t *testing.T, x *fakeindexer.Indexer, b newznab.Budget) *newznab.Client {
	t.Helper()
	tr := transport.New(transport.Config{HeaderTimeout: 2 * time.Second, IdleTimeout: 2 * time.Second})
	t.Cleanup(tr.CloseIdleConnections)
	c, err := newznab.New(newznab.Config{
		URL: x.URL(), APIKey: apiKey, Name: "fake", HTTPClient: &http.Client{Transport: tr}, Budget: b,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newIndexer(t *testing.T, o fakeindexer.Options) *fakeindexer.Indexer {
	o.APIKey = apiKey
	x := fakeindexer.New(o)
	t.Cleanup(x.Close)
	return x
}

func guids(rs []fakeindexer.Release) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.GUID
	}
	return out
}

func TestIndexerSteadyStateIsOnePagePerSync(t *testing.T) {
	t.Parallel()
	for _, torznab := range []bool{false, true} {
		x := newIndexer(t, fakeindexer.Options{Torznab: torznab})
		clk := newClock()
		x.Publish(300, clk.Now())
		s := newSyncer(t, sqlitetest.Open(t), feed.Config{Now: clk.Now})
		src := indexerClient(t, x, nil)
		res, err := s.Sync(ctx(t), "fake", src)
		if err != nil || len(res.Items) != 100 || res.Pages != 1 {
			t.Fatalf("first sync: %d items, %d pages, %v", len(res.Items), res.Pages, err)
		}
		for i := range 5 {
			clk.Advance(30 * time.Minute)
			fresh := x.Publish(i*7, clk.Now())
			before := x.Count("search")
			res, err := s.Sync(ctx(t), "fake", src)
			if err != nil {
				t.Fatal(err)
			}
			if n := x.Count("search") - before; n != 1 {
				t.Fatalf("torznab=%v poll %d: %d search requests; want 1", torznab, i, n)
			}
			got := newTally(t)
			got.add(res.Items)
			if miss := got.missing(guids(fresh)); len(miss) > 0 || len(res.Items) != len(fresh) {
				t.Fatalf("poll %d: %d items for %d new, missing %v", i, len(res.Items), len(fresh), miss)
			}
		}
		if n := x.Count("caps"); n != 1 {
			t.Fatalf("caps read %d times", n)
		}
	}
}

// TestIndexerBurstOf250 publishes 250 releases in one second (the same
// publish time, so only ids tell them apart) and lets a Syncer with two
// pages a call catch up while releases keep arriving.
func TestIndexerBurstOf250(t *testing.T) {
	t.Parallel()
	x := newIndexer(t, fakeindexer.Options{})
	clk := newClock()
	x.Publish(40, clk.Now())
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{MaxPages: 2, Now: clk.Now})
	src := indexerClient(t, x, nil)
	if _, err := s.Sync(ctx(t), "fake", src); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	want := guids(x.Publish(250, clk.Now()))
	got := newTally(t)
	calls := 0
	for ; calls < 10; calls++ {
		before := x.Count("search")
		res, err := s.Sync(ctx(t), "fake", src)
		if err != nil {
			t.Fatal(err)
		}
		if n := x.Count("search") - before; n > 2 {
			t.Fatalf("call %d made %d requests; MaxPages is 2", calls, n)
		}
		got.add(res.Items)
		if res.Stop == feed.StopCaughtUp {
			break
		}
		// A trickle of new releases between calls.
		clk.Advance(time.Minute)
		want = append(want, guids(x.Publish(3, clk.Now()))...)
	}
	if miss := got.missing(want); len(miss) > 0 {
		t.Fatalf("after %d calls %d releases missing: %v", calls+1, len(miss), miss)
	}
	if len(got.seen) != len(want) {
		t.Fatalf("handed out %d releases, want exactly %d", len(got.seen), len(want))
	}
}

func TestIndexerFailingPageLeavesCursor(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	x := newIndexer(t, fakeindexer.Options{})
	clk := newClock()
	x.Publish(20, clk.Now())
	s := newSyncer(t, st, feed.Config{Now: clk.Now})
	src := indexerClient(t, x, nil)
	if _, err := s.Sync(ctx(t), "fake", src); err != nil {
		t.Fatal(err)
	}
	want := guids(x.Publish(230, clk.Now()))
	before, _, _ := st.FeedCursor(ctx(t), "fake")
	x.Fail(fakeindexer.Fault{Offset: 198, Status: http.StatusBadGateway})
	res, err := s.Sync(ctx(t), "fake", src)
	var se *newznab.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadGateway || res.Stop != feed.StopFailed {
		t.Fatalf("sync with a 502 page: %v (stop %s)", err, res.Stop)
	}
	after, _, _ := st.FeedCursor(ctx(t), "fake")
	if string(before.State) != string(after.State) {
		t.Fatalf("a failed page moved the cursor")
	}
	got := newTally(t)
	got.add(res.Items)
	res, err = s.Sync(ctx(t), "fake", src)
	if err != nil {
		t.Fatal(err)
	}
	got.add(res.Items)
	if miss := got.missing(want); len(miss) > 0 || len(got.seen) != len(want) {
		t.Fatalf("after the retry: %d handed out, missing %v", len(got.seen), miss)
	}
}

func newBudget(t *testing.T, st *sqlite.Store, clk *clocktest.Clock, limit int64) *budget.Budget {
	t.Helper()
	b, err := budget.New(st, budget.Config{
		Sources: []budget.Source{{
			Name: "fake", OwnerDailyLimit: budget.Int(limit), Share: budget.ShareUnlimited,
			ReservePercent: budget.Int(0), Pace: budget.NoPace,
		}},
		Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIndexerBudgetExhaustedMidGapResumesNextDay: a burst too large for the
// day's allowance is read up to the allowance, refused cleanly, and
// finished the next UTC day.
func TestIndexerBudgetExhaustedMidGapResumesNextDay(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	clk := newClock() // 10:00 UTC
	b := newBudget(t, st, clk, 30)
	x := newIndexer(t, fakeindexer.Options{MaxLimit: 10})
	x.Publish(10, clk.Now())
	s := newSyncer(t, st, feed.Config{MaxPages: 100, Admitter: feed.BudgetAdmitter(b), Now: clk.Now})
	src := indexerClient(t, x, b)
	if _, err := s.Sync(ctx(t), "fake", src); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	want := guids(x.Publish(400, clk.Now()))
	got := newTally(t)
	res, err := s.Sync(ctx(t), "fake", src)
	if err != nil {
		t.Fatal(err)
	}
	got.add(res.Items)
	var ex *budget.ExhaustedError
	if res.Stop != feed.StopNotAdmitted || !errors.As(res.Refusal, &ex) || res.Gaps != 1 || len(res.Items) == 0 {
		t.Fatalf("day 1: stop %s, refusal %v, gaps %d, %d items", res.Stop, res.Refusal, res.Gaps, len(res.Items))
	}
	day1 := x.Count("search")
	// Later that day the head poll still has its reserved place, but the
	// gap waits.
	clk.Advance(3 * time.Hour)
	res, err = s.Sync(ctx(t), "fake", src)
	if err != nil || res.Stop != feed.StopNotAdmitted || res.Gaps != 1 || x.Count("search")-day1 > 3 {
		t.Fatalf("same day: %+v, %v, %d requests", res.Stop, err, x.Count("search")-day1)
	}
	got.add(res.Items)
	// The next days resume the gap until it closes.
	for day := 0; day < 5 && res.Stop != feed.StopCaughtUp; day++ {
		clk.Advance(24 * time.Hour)
		res, err = s.Sync(ctx(t), "fake", src)
		if err != nil {
			t.Fatal(err)
		}
		got.add(res.Items)
	}
	if miss := got.missing(want); len(miss) > 0 || res.Stop != feed.StopCaughtUp {
		t.Fatalf("stop %s; %d of %d missing", res.Stop, len(miss), len(want))
	}
}

// TestIndexerAPILimitReachedStopsForTheDay: the indexer's own "request
// limit reached" marks the source exhausted in the budget, so nothing more
// is asked until the next UTC day.
func TestIndexerAPILimitReachedStopsForTheDay(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	clk := newClock()
	b := newBudget(t, st, clk, 1000)
	x := newIndexer(t, fakeindexer.Options{APIMax: 4})
	x.Publish(10, clk.Now())
	s := newSyncer(t, st, feed.Config{MaxPages: 10, Admitter: feed.BudgetAdmitter(b), Now: clk.Now})
	src := indexerClient(t, x, b)
	if _, err := s.Sync(ctx(t), "fake", src); err != nil {
		t.Fatal(err)
	}
	want := guids(x.Publish(500, clk.Now()))
	got := newTally(t)
	res, err := s.Sync(ctx(t), "fake", src)
	if err != nil || res.Stop != feed.StopNotAdmitted || !errors.Is(res.Refusal, newznab.ErrAPILimit) || len(res.Items) == 0 {
		t.Fatalf("sync into the indexer's limit: stop %s, refusal %v, err %v", res.Stop, res.Refusal, err)
	}
	got.add(res.Items)
	used := x.Count("search")
	clk.Advance(time.Hour)
	res, err = s.Sync(ctx(t), "fake", src)
	var ex *budget.ExhaustedError
	if err != nil || res.Stop != feed.StopNotAdmitted || !errors.As(res.Refusal, &ex) || x.Count("search") != used {
		t.Fatalf("same day after the limit: stop %s refusal %v err %v, %d more requests", res.Stop, res.Refusal, err, x.Count("search")-used)
	}
	x.ResetAPIUsage()
	for day := 0; day < 5 && res.Stop != feed.StopCaughtUp; day++ {
		clk.Advance(24 * time.Hour)
		x.ResetAPIUsage()
		res, err = s.Sync(ctx(t), "fake", src)
		if err != nil {
			t.Fatal(err)
		}
		got.add(res.Items)
	}
	if miss := got.missing(want); len(miss) > 0 || res.Stop != feed.StopCaughtUp {
		t.Fatalf("stop %s; %d of %d missing", res.Stop, len(miss), len(want))
	}
}
