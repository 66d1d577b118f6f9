package feed_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/sqlitetest"
)

func TestFirstSyncReadsTheHeadOnly(t *testing.T) {
	t.Parallel()
	src := newList(100)
	src.publish(450)
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{})
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil {
		t.Fatal(err)
	}
	if !res.First || res.Pages != 1 || len(res.Items) != 100 || res.Stop != feed.StopCaughtUp || res.Gaps != 0 {
		t.Fatalf("first sync: first=%v pages=%d items=%d stop=%s gaps=%d", res.First, res.Pages, len(res.Items), res.Stop, res.Gaps)
	}
	if res.Items[0].ID != "i00450" || res.Items[99].ID != "i00351" {
		t.Fatalf("first sync items %s..%s", res.Items[0].ID, res.Items[99].ID)
	}
	// Steady state: nothing new costs one page and returns nothing.
	for range 3 {
		res, err = s.Sync(ctx(t), "idx", src)
		if err != nil || res.Pages != 1 || len(res.Items) != 0 || res.First || res.Stop != feed.StopCaughtUp {
			t.Fatalf("steady sync: %+v, %v", res, err)
		}
	}
	// A few new items: still one page, exactly those.
	ids := src.publish(7)
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil || res.Pages != 1 || len(res.Items) != 7 || res.Items[0].ID != ids[6] || res.Items[6].ID != ids[0] {
		t.Fatalf("sync after 7 new: %+v, %v", res, err)
	}
	if n := src.requests(); n != 5 {
		t.Fatalf("%d page requests for 5 syncs", n)
	}
}

func TestFirstSyncCatchUp(t *testing.T) {
	t.Parallel()
	src := newList(100)
	src.publish(450)
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{CatchUp: 2})
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil {
		t.Fatal(err)
	}
	// Pages overlap by one item so that each can check its place.
	if res.Pages != 3 || len(res.Items) != 298 || res.Gaps != 0 {
		t.Fatalf("catch-up: pages=%d items=%d gaps=%d", res.Pages, len(res.Items), res.Gaps)
	}
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil || res.Pages != 1 || len(res.Items) != 0 {
		t.Fatalf("after catch-up: %+v, %v", res, err)
	}
}

// TestBurstIsCaughtUpAcrossCalls: 250 new releases with three pages a call
// are read over several calls, with new releases arriving in between and
// while pages are read, and every release comes out exactly once.
func TestBurstIsCaughtUpAcrossCalls(t *testing.T) {
	t.Parallel()
	src := newList(100)
	src.publish(120)
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{MaxPages: 2})
	got := newTally(t)
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil {
		t.Fatal(err)
	}
	got.add(res.Items)

	want := src.publish(250)
	// Releases also arrive during the walk: two before every gap page.
	var requests atomic.Int32
	src.onPage = func(offset int) {
		if requests.Add(1)%2 == 0 {
			want = append(want, src.publish(2)...)
		}
	}
	calls := 0
	for ; calls < 10; calls++ {
		res, err := s.Sync(ctx(t), "idx", src)
		if err != nil {
			t.Fatal(err)
		}
		if res.Pages > 2 {
			t.Fatalf("call %d used %d pages; MaxPages is 2", calls, res.Pages)
		}
		got.add(res.Items)
		if res.Gaps == 0 && res.Stop == feed.StopCaughtUp {
			break
		}
	}
	src.onPage = nil
	// What arrived during the last walk is read by the next sync.
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil {
		t.Fatal(err)
	}
	got.add(res.Items)
	if miss := got.missing(want); len(miss) > 0 {
		t.Fatalf("after %d calls, %d releases never came out: %v", calls+1, len(miss), miss)
	}
	if calls+1 < 2 || calls+1 > 5 {
		t.Fatalf("caught up after %d calls; expected a few", calls+1)
	}
	st, err := s.Status(ctx(t), "idx")
	if err != nil || st.Gaps != 0 || st.Items != int64(len(got.seen)) {
		t.Fatalf("status %+v, %v; want no gap and %d items", st, err, len(got.seen))
	}
}

func TestFailedPageLeavesTheCursor(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	src := newList(50)
	src.publish(60)
	s := newSyncer(t, st, feed.Config{MaxPages: 10})
	if _, err := s.Sync(ctx(t), "idx", src); err != nil {
		t.Fatal(err)
	}
	want := src.publish(180)
	before, _, err := st.FeedCursor(ctx(t), "idx")
	if err != nil {
		t.Fatal(err)
	}
	// Requests so far: 1. The third request of the next sync fails.
	src.failRequest(1+3, errPageDown)
	res, err := s.Sync(ctx(t), "idx", src)
	if !errors.Is(err, errPageDown) || res.Stop != feed.StopFailed || res.Pages != 3 {
		t.Fatalf("sync with a failing page: %+v, %v", res, err)
	}
	if !strings.HasPrefix(err.Error(), "feed: idx: page at offset ") {
		t.Fatalf("error %q does not say which feed and page", err)
	}
	got := newTally(t)
	got.add(res.Items)
	if len(res.Items) != 99 { // two pages of 50 overlapping by one
		t.Fatalf("failed sync returned %d items read before the failure, want 99", len(res.Items))
	}
	after, _, err := st.FeedCursor(ctx(t), "idx")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.State, after.State) {
		t.Fatalf("the failed sync moved the cursor:\n%s\n%s", before.State, after.State)
	}
	// The retry reads the same stretch again but hands out only the rest.
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil {
		t.Fatal(err)
	}
	got.add(res.Items)
	if miss := got.missing(want); len(miss) > 0 {
		t.Fatalf("missing after the retry: %v", miss)
	}
	if len(got.seen) != len(want) {
		t.Fatalf("handed out %d items, want %d", len(got.seen), len(want))
	}
}

// dailyGate is an Admitter with a fixed number of page requests per UTC day
// of a fake clock.
type dailyGate struct {
	clk     *clocktest.Clock
	perDay  int
	day     time.Time
	used    int
	heads   int
	gaps    int
	refused int
}

func (g *dailyGate) AdmitPage(_ context.Context, _ string, head bool) error {
	day := g.clk.Now().Truncate(24 * time.Hour)
	if !day.Equal(g.day) {
		g.day, g.used = day, 0
	}
	if g.used >= g.perDay {
		g.refused++
		return fmt.Errorf("%w: allowance used up until %s", feed.ErrNotAdmitted, day.Add(24*time.Hour).Format(time.DateOnly))
	}
	g.used++
	if head {
		g.heads++
	} else {
		g.gaps++
	}
	return nil
}

func TestExhaustedAllowanceResumesNextDay(t *testing.T) {
	t.Parallel()
	clk := newClock()
	src := newList(100)
	src.publish(30)
	gate := &dailyGate{clk: clk, perDay: 3}
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{MaxPages: 10, Admitter: gate, Now: clk.Now})
	if _, err := s.Sync(ctx(t), "idx", src); err != nil {
		t.Fatal(err)
	}
	want := src.publish(500)
	got := newTally(t)
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil {
		t.Fatalf("a refusal is not an error: %v", err)
	}
	got.add(res.Items)
	if res.Stop != feed.StopNotAdmitted || !errors.Is(res.Refusal, feed.ErrNotAdmitted) || res.Gaps != 1 || res.Pages != 2 {
		t.Fatalf("mid-gap refusal: %+v", res)
	}
	// Later the same day: refused at once, nothing requested.
	before := src.requests()
	clk.Advance(time.Hour)
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil || res.Stop != feed.StopNotAdmitted || res.Pages != 0 || src.requests() != before {
		t.Fatalf("same-day sync: %+v, %v", res, err)
	}
	// Next day: resumes where it stopped, and so on until caught up.
	for day := 0; day < 5; day++ {
		clk.Advance(24 * time.Hour)
		res, err = s.Sync(ctx(t), "idx", src)
		if err != nil {
			t.Fatal(err)
		}
		got.add(res.Items)
		if res.Stop == feed.StopCaughtUp {
			break
		}
	}
	if miss := got.missing(want); len(miss) > 0 || res.Stop != feed.StopCaughtUp {
		t.Fatalf("stop %s; %d of %d never came out", res.Stop, len(miss), len(want))
	}
	if gate.heads == 0 || gate.gaps == 0 {
		t.Fatalf("heads %d, gaps %d: both kinds should have been admitted", gate.heads, gate.gaps)
	}
}

func TestResumeReadsGapsOnly(t *testing.T) {
	t.Parallel()
	var heads, gaps atomic.Int32
	gate := feed.AdmitterFunc(func(_ context.Context, _ string, head bool) error {
		if head {
			heads.Add(1)
		} else {
			gaps.Add(1)
		}
		return nil
	})
	src := newList(100)
	src.publish(10)
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{MaxPages: 2, Admitter: gate})
	if res, err := s.Resume(ctx(t), "idx", src); err != nil || res.Stop != feed.StopNoGap || res.Pages != 0 {
		t.Fatalf("resume of a new feed: %+v, %v", res, err)
	}
	if _, err := s.Sync(ctx(t), "idx", src); err != nil {
		t.Fatal(err)
	}
	want := src.publish(400)
	got := newTally(t)
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil || res.Gaps != 1 {
		t.Fatalf("sync: %+v, %v", res, err)
	}
	got.add(res.Items)
	newer := src.publish(30) // arrive before the resumes; they wait for the next Sync
	heads.Store(0)
	for range 5 {
		res, err = s.Resume(ctx(t), "idx", src)
		if err != nil {
			t.Fatal(err)
		}
		got.add(res.Items)
		if res.Gaps == 0 {
			break
		}
	}
	if heads.Load() != 0 {
		t.Fatalf("Resume admitted %d head polls", heads.Load())
	}
	if miss := got.missing(want); len(miss) > 0 {
		t.Fatalf("resume missed %d: %v", len(miss), miss)
	}
	if len(got.missing(newer)) != len(newer) {
		t.Fatal("Resume read above the stored head")
	}
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil {
		t.Fatal(err)
	}
	got.add(res.Items)
	if miss := got.missing(newer); len(miss) > 0 || res.Pages != 1 {
		t.Fatalf("sync after resume: pages %d, missing %v", res.Pages, miss)
	}
}

func TestTakenDownHeadFallsBackToTime(t *testing.T) {
	t.Parallel()
	src := newList(20)
	first := src.publish(30)
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{})
	if _, err := s.Sync(ctx(t), "idx", src); err != nil {
		t.Fatal(err)
	}
	src.remove(first[29]) // the stored head
	src.remove(first[28])
	want := src.publish(5)
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != 1 || len(res.Items) != 5 || res.Stop != feed.StopCaughtUp {
		t.Fatalf("sync past a taken-down head: pages %d items %d stop %s", res.Pages, len(res.Items), res.Stop)
	}
	got := newTally(t)
	got.add(res.Items)
	if miss := got.missing(want); len(miss) > 0 {
		t.Fatalf("missing %v", miss)
	}
}

func TestConcurrentSyncConflicts(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	src := newList(10)
	src.publish(10)
	a := newSyncer(t, st, feed.Config{})
	b := newSyncer(t, st, feed.Config{}) // as another node would have
	if _, err := a.Sync(ctx(t), "idx", src); err != nil {
		t.Fatal(err)
	}
	src.publish(3)
	// While a reads its page, b completes a whole sync of the same feed.
	var bres feed.Result
	var berr error
	src.onPage = func(int) {
		src.onPage = nil
		bres, berr = b.Sync(ctx(t), "idx", src)
	}
	res, err := a.Sync(ctx(t), "idx", src)
	if !errors.Is(err, feed.ErrConflict) || len(res.Items) != 0 {
		t.Fatalf("the overtaken sync: %+v, %v; want ErrConflict and nothing handed out", res, err)
	}
	if berr != nil || len(bres.Items) != 3 {
		t.Fatalf("the overtaking sync: %+v, %v", bres, berr)
	}
}

func TestSourceExhaustionIsPassedOn(t *testing.T) {
	t.Parallel()
	src := newList(10)
	src.publish(10)
	m := &markingGate{}
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{Admitter: m})
	if _, err := s.Sync(ctx(t), "idx", src); err != nil {
		t.Fatal(err)
	}
	want := src.publish(30)
	src.failRequest(4, fmt.Errorf("indexer: %w", feed.ErrSourceExhausted)) // after the head page and one gap page
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil || res.Stop != feed.StopNotAdmitted || !errors.Is(res.Refusal, feed.ErrSourceExhausted) || m.marked.Load() != 1 {
		t.Fatalf("res %+v, err %v, marked %d", res, err, m.marked.Load())
	}
	// The pages read before the refusal count: the next sync goes on after
	// them (head page, then the last two pages of the gap).
	got := newTally(t)
	got.add(res.Items)
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil || res.Pages != 3 {
		t.Fatalf("next sync: pages %d, %v", res.Pages, err)
	}
	got.add(res.Items)
	if miss := got.missing(want); len(miss) > 0 {
		t.Fatalf("missing %v", miss)
	}
}

type markingGate struct{ marked atomic.Int32 }

func (*markingGate) AdmitPage(context.Context, string, bool) error { return nil }
func (m *markingGate) MarkExhausted(context.Context, string, time.Time) error {
	m.marked.Add(1)
	return nil
}

func TestStatusAndReset(t *testing.T) {
	t.Parallel()
	clk := newClock()
	src := newList(10)
	src.publish(15)
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{Now: clk.Now})
	if st, err := s.Status(ctx(t), "idx"); err != nil || st.Synced {
		t.Fatalf("status before any sync: %+v, %v", st, err)
	}
	for _, name := range []string{"idx", "other"} {
		if _, err := s.Sync(ctx(t), name, src); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Status(ctx(t), "idx")
	if err != nil || !st.Synced || st.Items != 10 || st.Head.ID != feed.IDHash("i00015") || !st.SyncedAt.Equal(clk.Now()) || st.Remembered != 10 {
		t.Fatalf("status %+v, %v", st, err)
	}
	all, err := s.Statuses(ctx(t))
	if err != nil || len(all) != 2 || all[1].Name != "other" {
		t.Fatalf("statuses %+v, %v", all, err)
	}
	if ok, err := s.Reset(ctx(t), "idx"); !ok || err != nil {
		t.Fatalf("reset %v, %v", ok, err)
	}
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil || !res.First || len(res.Items) != 10 {
		t.Fatalf("sync after reset: %+v, %v", res, err)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	s := newSyncer(t, st, feed.Config{})
	inputError := func(err error, field, reason string) bool {
		var ie *feed.InputError
		return errors.As(err, &ie) && errors.Is(err, feed.ErrInvalid) && ie.Field == field && strings.Contains(ie.Reason, reason) &&
			err.Error() == "feed: "+field+": "+ie.Reason
	}
	for name, reason := range map[string]string{
		"":                       "is empty",
		strings.Repeat("n", 300): "300 bytes long",
		"a\x00b":                 "contains a NUL byte",
		"bell\x07":               "control character U+0007",
		"bad\xff":                "not valid UTF-8",
	} {
		if _, err := s.Sync(ctx(t), name, newList(1)); !inputError(err, "name", reason) {
			t.Errorf("name %q: %v; want an InputError saying %q", name, err, reason)
		}
		if _, err := s.Status(ctx(t), name); !inputError(err, "name", reason) {
			t.Errorf("status of %q: %v", name, err)
		}
	}
	if _, err := s.Sync(ctx(t), "idx", nil); !inputError(err, "source", "is nil") {
		t.Errorf("nil source: %v", err)
	}
	for _, c := range []struct {
		cfg   feed.Config
		field string
	}{{feed.Config{MaxPages: -1}, "max_pages"}, {feed.Config{CatchUp: -1}, "catch_up"}, {feed.Config{MaxGaps: -2}, "max_gaps"}} {
		if _, err := feed.NewSyncer(st, c.cfg); !inputError(err, c.field, "is -") || !inputError(c.cfg.Validate(), c.field, "is -") {
			t.Errorf("NewSyncer(%+v) = %v; want an InputError on %s", c.cfg, err, c.field)
		}
	}
	if _, err := feed.NewSyncer(nil, feed.Config{}); !inputError(err, "store", "is nil") {
		t.Errorf("nil store: %v", err)
	}
	if cs, _ := st.FeedCursors(ctx(t)); len(cs) != 0 {
		t.Fatalf("bad input stored %d cursors", len(cs))
	}
}

// TestUnidentifiedItemsHoldTheirPlace syncs a feed with items the source
// could not identify, a whole page of them among others: a page of
// placeholders is not the end of the feed, no identified item is lost or
// handed out twice, and each placeholder is counted once.
func TestUnidentifiedItemsHoldTheirPlace(t *testing.T) {
	t.Parallel()
	src := newList(5)
	var want []string
	want = append(want, src.publish(2)...)
	src.publishUnidentified(1)
	want = append(want, src.publish(2)...) // the head page holds all five
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{MaxPages: 20, Now: newClock().Now})
	got := newTally(t)
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil || res.Skipped["no id here"] != 1 {
		t.Fatalf("first sync: %+v, %v", res, err)
	}
	got.add(res.Items)

	// A burst: identified items below and above a stretch of twelve
	// placeholders, which fills whole pages.
	want = append(want, src.publish(6)...)
	src.publishUnidentified(12)
	want = append(want, src.publish(1)...)
	src.publishUnidentified(1)
	want = append(want, src.publish(7)...)
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil || res.Stop != feed.StopCaughtUp || res.Gaps != 0 {
		t.Fatalf("burst sync: %+v, %v", res, err)
	}
	got.add(res.Items)
	if m := got.missing(want); len(m) > 0 {
		t.Fatalf("never handed out: %v", m)
	}
	if n := res.Skipped["no id here"]; n != 13 {
		t.Fatalf("skipped %v; want the 13 new placeholders, each once", res.Skipped)
	}
	for _, it := range res.Items {
		if it.ID == "" {
			t.Fatalf("a placeholder was handed out: %+v", it)
		}
	}

	// Nothing new: one page, and the placeholder on it counted again.
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil || len(res.Items) != 0 || res.Pages != 1 || res.Stop != feed.StopCaughtUp {
		t.Fatalf("steady sync: %+v, %v", res, err)
	}
}

// TestGapEndingInPlaceholdersResumes cuts a burst off (MaxPages) inside a
// stretch of placeholders: the gap resumes from the last identified item,
// and nothing is lost.
func TestGapEndingInPlaceholdersResumes(t *testing.T) {
	t.Parallel()
	src := newList(4)
	want := src.publish(4)
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{MaxPages: 2, Now: newClock().Now})
	got := newTally(t)
	res, err := s.Sync(ctx(t), "idx", src)
	if err != nil {
		t.Fatal(err)
	}
	got.add(res.Items)
	want = append(want, src.publish(3)...)
	src.publishUnidentified(9)
	want = append(want, src.publish(5)...)
	res, err = s.Sync(ctx(t), "idx", src)
	if err != nil || res.Stop != feed.StopMaxPages || res.Gaps != 1 {
		t.Fatalf("burst sync: %+v, %v", res, err)
	}
	got.add(res.Items)
	for range 10 {
		res, err = s.Resume(ctx(t), "idx", src)
		if err != nil {
			t.Fatal(err)
		}
		got.add(res.Items)
		if res.Stop == feed.StopCaughtUp || res.Stop == feed.StopNoGap {
			break
		}
	}
	if res.Gaps != 0 {
		t.Fatalf("gap never closed: %+v", res)
	}
	if m := got.missing(want); len(m) > 0 {
		t.Fatalf("never handed out: %v", m)
	}
}

// slowSource answers each page after a delay, or gives up when the
// request's context ends first, as an HTTP client does.
type slowSource struct {
	feed.Source
	delay time.Duration
}

func (s slowSource) Page(ctx context.Context, offset int) ([]feed.Item, error) {
	select {
	case <-time.After(s.delay):
		return s.Source.Page(ctx, offset)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestSyncIsBoundedInTime runs in a synctest bubble, where the pages'
// delays and the sync's time limit run on a fake clock.
func TestSyncIsBoundedInTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		bg := context.Background()
		list := newList(10)
		list.publish(5)
		st := sqlitetest.Open(t)
		s := newSyncer(t, st, feed.Config{MaxPages: 50, SyncTimeout: 2 * time.Minute})
		got := newTally(t)
		res, err := s.Sync(bg, "f", list)
		if err != nil {
			t.Fatal(err)
		}
		got.add(res.Items)
		want := list.publish(100)

		// Each page takes 50 s: two come back, the third is cut short at
		// the 2-minute mark, and what the two held is saved.
		start := time.Now()
		res, err = s.Sync(bg, "f", slowSource{list, 50 * time.Second})
		if err != nil || res.Stop != feed.StopTimeLimit || res.Pages != 3 || len(res.Items) != 19 || res.Gaps != 1 {
			t.Fatalf("slow sync: %+v, %v", res, err)
		}
		if d := time.Since(start); d != 2*time.Minute {
			t.Fatalf("the slow sync took %v; the limit is 2m", d)
		}
		got.add(res.Items)

		// The very first page cut short: nothing was done, and the sync
		// failed without moving the cursor.
		before, _, _ := st.FeedCursor(bg, "f")
		res, err = s.Resume(bg, "f", slowSource{list, 3 * time.Minute})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "time limit (2m0s)") || res.Stop != feed.StopFailed {
			t.Fatalf("resume cut on its first page: %+v, %v", res, err)
		}
		if after, _, _ := st.FeedCursor(bg, "f"); string(after.State) != string(before.State) {
			t.Fatalf("a failed resume moved the cursor:\n%s\n%s", before.State, after.State)
		}

		// A caller's own deadline is not the sync's time limit: it fails.
		cctx, cancel := context.WithTimeout(bg, 70*time.Second)
		res, err = s.Resume(cctx, "f", slowSource{list, 50 * time.Second})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || res.Stop != feed.StopFailed {
			t.Fatalf("resume under the caller's deadline: %+v, %v", res, err)
		}

		res, err = s.Resume(bg, "f", list)
		if err != nil || res.Stop != feed.StopCaughtUp {
			t.Fatalf("resume: %+v, %v", res, err)
		}
		got.add(res.Items)
		if m := got.missing(want); len(m) > 0 {
			t.Fatalf("never handed out: %v", m)
		}
	})
}

func TestSeenIDsAgeOut(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		seenFor   time.Duration
		forgotten int64
	}{{0, 10}, {-1, 0}, {40 * 24 * time.Hour, 0}} {
		clk := newClock()
		src := newList(10)
		src.publish(10)
		s := newSyncer(t, sqlitetest.Open(t), feed.Config{Now: clk.Now, SeenFor: c.seenFor})
		if _, err := s.Sync(ctx(t), "f", src); err != nil {
			t.Fatal(err)
		}
		clk.Advance(31 * 24 * time.Hour)
		src.publish(1)
		res, err := s.Sync(ctx(t), "f", src)
		if err != nil || len(res.Items) != 1 || res.Forgotten != c.forgotten {
			t.Fatalf("SeenFor %v: sync a month later %+v, %v; want %d forgotten", c.seenFor, res, err, c.forgotten)
		}
		if st, _ := s.Status(ctx(t), "f"); st.Remembered != 11-c.forgotten {
			t.Fatalf("SeenFor %v: %d remembered", c.seenFor, st.Remembered)
		}
	}
}

// TestBudgetRefusalInsideTheSource: a source whose transport admits its
// requests refuses a page with the budget's error; the sync stops as
// cleanly as when its own Admitter refuses.
func TestBudgetRefusalInsideTheSource(t *testing.T) {
	t.Parallel()
	src := newList(10)
	src.publish(5)
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{MaxPages: 10})
	if _, err := s.Sync(ctx(t), "f", src); err != nil {
		t.Fatal(err)
	}
	src.publish(30)
	refusal := fmt.Errorf("transport: http://x: not admitted: %w", &budget.ExhaustedError{Source: "f", Kind: budget.KindGapPage})
	src.failRequest(src.requests()+2, refusal)
	res, err := s.Sync(ctx(t), "f", src)
	var ex *budget.ExhaustedError
	if err != nil || res.Stop != feed.StopNotAdmitted || !errors.As(res.Refusal, &ex) || len(res.Items) != 10 || res.Gaps != 1 {
		t.Fatalf("sync refused on its second page: %+v, %v", res, err)
	}
}
