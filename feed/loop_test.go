package feed_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/internal/logtest"
	"github.com/hostguard/hostguard/internal/sqlitetest"
	"github.com/hostguard/hostguard/leader"
)

// The loop tests run in a synctest bubble: time.Now and the loop's timers
// are fake and jump ahead whenever every goroutine waits, so hours of
// polling take milliseconds.

// timedSource records when (on the bubble's clock) each page was asked for.
type timedSource struct {
	*listSource
	mu    sync.Mutex
	times []time.Time
	offs  []int
	fail  error
}

func newTimed(pageSize int) *timedSource { return &timedSource{listSource: newList(pageSize)} }

func (s *timedSource) Page(ctx context.Context, offset int) ([]feed.Item, error) {
	s.mu.Lock()
	s.times = append(s.times, time.Now())
	s.offs = append(s.offs, offset)
	err := s.fail
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.listSource.Page(ctx, offset)
}

// heads returns the minutes (since start) at which the head page was read.
func (s *timedSource) heads(start time.Time) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i, at := range s.times {
		if s.offs[i] == 0 {
			out = append(out, int(at.Sub(start)/time.Minute))
		}
	}
	return out
}

type fixedIntervals map[string]time.Duration

func (f fixedIntervals) PollInterval(source string) (time.Duration, error) {
	if d, ok := f[source]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("no source %q", source)
}

// runLoop starts l and returns a stop function that ends it and waits.
func runLoop(t *testing.T, l *feed.Loop) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

func TestLoopPollsEachFeedAtItsInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		a, b := newTimed(10), newTimed(10)
		a.publish(5)
		b.publish(5)
		s := newSyncer(t, sqlitetest.Open(t), feed.Config{})
		l, err := feed.NewLoop(feed.LoopConfig{
			Syncer:    s,
			Feeds:     []feed.LoopFeed{{Name: "a", Source: a}, {Name: "b", Source: b}},
			Intervals: fixedIntervals{"a": 30 * time.Minute, "b": time.Hour},
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := runLoop(t, l)
		time.Sleep(3*time.Hour + time.Minute)
		synctest.Wait()
		st := l.Status()
		stop()
		if got := fmt.Sprint(a.heads(start)); got != "[0 30 60 90 120 150 180]" {
			t.Errorf("feed a polled at minutes %s", got)
		}
		if got := fmt.Sprint(b.heads(start)); got != "[0 60 120 180]" {
			t.Errorf("feed b polled at minutes %s", got)
		}
		if len(st) != 2 || !st[0].Leading || st[0].Items != 5 || st[0].Interval != 30*time.Minute ||
			!st[0].LastHeadPoll.Equal(start.Add(180*time.Minute)) || !st[0].NextHeadPoll.Equal(start.Add(210*time.Minute)) {
			t.Errorf("status %+v", st)
		}
		if l.Status()[0].Leading {
			t.Error("a stopped loop still says it leads")
		}
	})
}

func TestLoopResumesGapsBetweenPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := newTimed(10)
		src.publish(10)
		var mu sync.Mutex
		got := newTally(t)
		s := newSyncer(t, sqlitetest.Open(t), feed.Config{MaxPages: 2})
		l, err := feed.NewLoop(feed.LoopConfig{
			Syncer: s, Feeds: []feed.LoopFeed{{Name: "f", Source: src}},
			OnItems: func(_ context.Context, name string, items []feed.Item) {
				mu.Lock()
				got.add(items)
				mu.Unlock()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := runLoop(t, l)
		time.Sleep(10 * time.Minute)
		want := src.publish(100) // between polls: the 30-minute poll finds them
		time.Sleep(25 * time.Minute)
		synctest.Wait()
		st := l.Status()[0]
		stop()
		mu.Lock()
		defer mu.Unlock()
		if miss := got.missing(want); len(miss) > 0 {
			t.Fatalf("missing %d: %v", len(miss), miss)
		}
		// Polls at 0 and 30; the 30-minute poll left a gap, resumed at 31,
		// 32, ... without reading the head again.
		if h := fmt.Sprint(src.heads(start)); h != "[0 30]" {
			t.Errorf("head polls at %s", h)
		}
		src.mu.Lock()
		last := src.times[len(src.times)-1].Sub(start)
		src.mu.Unlock()
		if last < 31*time.Minute || last > 35*time.Minute {
			t.Errorf("last page read at %v; the gap should close within minutes of the 30-minute poll", last)
		}
		if st.Gaps != 0 || st.LastStop != feed.StopCaughtUp || !st.NextResume.IsZero() {
			t.Errorf("status %+v", st)
		}
	})
}

// refusingGate admits head polls and refuses gap pages, as an exhausted
// allowance that resets in five minutes would.
type refusingGate struct {
	mu     sync.Mutex
	asked  []time.Time
	refuse bool
}

func (g *refusingGate) AdmitPage(_ context.Context, _ string, head bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if head {
		return nil
	}
	g.asked = append(g.asked, time.Now())
	if g.refuse {
		return fmt.Errorf("%w: %w", feed.ErrNotAdmitted, &budget.ExhaustedError{ResetAt: time.Now().Add(5 * time.Minute)})
	}
	return nil
}

func TestLoopRefusedGapWaitsForTheReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := newTimed(10)
		src.publish(10)
		gate := &refusingGate{}
		s := newSyncer(t, sqlitetest.Open(t), feed.Config{MaxPages: 3, Admitter: gate})
		l, err := feed.NewLoop(feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "f", Source: src}}})
		if err != nil {
			t.Fatal(err)
		}
		stop := runLoop(t, l)
		synctest.Wait()
		gate.mu.Lock()
		gate.refuse = true
		gate.mu.Unlock()
		src.publish(200)
		time.Sleep(30*time.Minute + 30*time.Second) // the poll at 30 leaves a gap, refused
		synctest.Wait()
		st := l.Status()[0]
		if st.LastStop != feed.StopNotAdmitted || st.Gaps != 1 || !strings.Contains(st.LastError, "allowance exhausted") {
			t.Fatalf("status after the refusal %+v", st)
		}
		if want := start.Add(35 * time.Minute); !st.NextResume.Equal(want) {
			t.Fatalf("next resume %v, want the reset at %v", st.NextResume.Sub(start), want.Sub(start))
		}
		gate.mu.Lock()
		gate.refuse = false
		gate.mu.Unlock()
		time.Sleep(20 * time.Minute) // 200 items at 27 a resume: closed by 43
		synctest.Wait()
		st = l.Status()[0]
		stop()
		gate.mu.Lock()
		defer gate.mu.Unlock()
		var mins []int
		for _, at := range gate.asked {
			mins = append(mins, int(at.Sub(start)/time.Minute))
		}
		// Refused once at 30, then asked again at the reset (35) and on.
		if len(mins) < 2 || mins[0] != 30 || mins[1] != 35 {
			t.Fatalf("gap admissions at minutes %v", mins)
		}
		if st.Gaps != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}

func TestLoopBacksOffAfterFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := newTimed(10)
		src.publish(3)
		src.fail = fmt.Errorf("indexer down")
		s := newSyncer(t, sqlitetest.Open(t), feed.Config{})
		l, err := feed.NewLoop(feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "f", Source: src}}, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		stop := runLoop(t, l)
		time.Sleep(70 * time.Minute)
		synctest.Wait()
		st := l.Status()[0]
		stop()
		// 1, 2, 4, 8, 16 minutes apart, then the 30-minute interval caps it.
		if h := fmt.Sprint(src.heads(start)); h != "[0 1 3 7 15 31 61]" {
			t.Errorf("attempts at minutes %s", h)
		}
		if !strings.Contains(st.LastError, "indexer down") || st.LastStop != feed.StopFailed {
			t.Errorf("status %+v", st)
		}
	})
}

// switchElector leads while its test says so.
type switchElector struct {
	mu      sync.Mutex
	leading bool
	changed chan struct{}
}

func newSwitch() *switchElector { return &switchElector{changed: make(chan struct{})} }

func (e *switchElector) set(v bool) {
	e.mu.Lock()
	e.leading = v
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

func (e *switchElector) state() (bool, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading, e.changed
}

func (e *switchElector) Run(ctx context.Context, fn func(context.Context) error) error {
	for {
		leading, changed := e.state()
		if !leading {
			select {
			case <-ctx.Done():
				return nil
			case <-changed:
				continue
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { fn(wctx); close(done) }()
		select {
		case <-ctx.Done():
		case <-changed:
		}
		cancel()
		<-done
		if ctx.Err() != nil {
			return nil
		}
	}
}

func TestLoopPollsOnlyWhileLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := newTimed(10)
		src.publish(3)
		el := newSwitch()
		s := newSyncer(t, sqlitetest.Open(t), feed.Config{})
		l, err := feed.NewLoop(feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "f", Source: src}}, Elector: el, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		stop := runLoop(t, l)
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(src.heads(start)); n != 0 || l.Status()[0].Leading {
			t.Fatalf("a follower polled %d times", n)
		}
		el.set(true) // at 60: leads, polls at once (never polled before)
		time.Sleep(45 * time.Minute)
		el.set(false) // at 105: loses; 120 must not happen
		time.Sleep(time.Hour)
		synctest.Wait()
		if l.Status()[0].Leading {
			t.Fatal("status says leading after leadership was lost")
		}
		el.set(true) // at 165: the stored sync (90) is older than 30 min: poll now
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()
		if h := fmt.Sprint(src.heads(start)); h != "[60 90 165]" {
			t.Fatalf("polls at minutes %s", h)
		}
	})
}

func TestLoopWithSQLiteLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := sqlitetest.Open(t)
		el, err := leader.New(st, leader.Config{Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		src := newTimed(10)
		src.publish(3)
		s := newSyncer(t, st, feed.Config{})
		l, err := feed.NewLoop(feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "f", Source: src}}, Elector: el, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		stop := runLoop(t, l)
		time.Sleep(time.Minute)
		synctest.Wait()
		got := l.Status()[0]
		stop()
		if !got.Leading || got.Items != 3 {
			t.Fatalf("status %+v", got)
		}
	})
}

func TestLoopConfigErrors(t *testing.T) {
	t.Parallel()
	s := newSyncer(t, sqlitetest.Open(t), feed.Config{})
	src := newList(1)
	cases := []struct {
		cfg          feed.LoopConfig
		field, words string
	}{
		{feed.LoopConfig{Feeds: []feed.LoopFeed{{Name: "a", Source: src}}}, "syncer", "is nil"},
		{feed.LoopConfig{Syncer: s}, "feeds", "is empty"},
		{feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "a", Source: src}, {Name: "a", Source: src}}}, "feeds[1].name", `"a" is used twice`},
		{feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "", Source: src}}}, "feeds[0].name", "is empty"},
		{feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "a"}}}, "feeds[0].source", "is nil"},
		{feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "a", Source: src}}, GapEvery: -1}, "gap_every", "is -1ns"},
	}
	for _, c := range cases {
		_, err := feed.NewLoop(c.cfg)
		var ie *feed.InputError
		if !errors.As(err, &ie) || !errors.Is(err, feed.ErrInvalid) || ie.Field != c.field || !strings.Contains(ie.Reason, c.words) {
			t.Errorf("NewLoop: %v; want an InputError on %s saying %q", err, c.field, c.words)
		}
	}
}

func TestLoopRunLeadingInsideAnotherElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTimed(10)
		src.publish(4)
		l, err := feed.NewLoop(feed.LoopConfig{Syncer: newSyncer(t, sqlitetest.Open(t), feed.Config{}), Feeds: []feed.LoopFeed{{Name: "f", Source: src}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.RunLeading(ctx) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		st := l.Status()[0]
		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("RunLeading returned %v, want context.Canceled", err)
		}
		if !st.Leading || st.Items != 4 || l.Status()[0].Leading {
			t.Fatalf("status while leading %+v; after: leading=%v", st, l.Status()[0].Leading)
		}
	})
}

// retryLater is a source's temporary refusal that says when to come back.
type retryLater struct{ at time.Time }

func (e retryLater) Error() string        { return "disabled till " + e.at.Format(time.RFC3339) }
func (e retryLater) Is(target error) bool { return target == feed.ErrSourceExhausted }
func (e retryLater) RetryAt() time.Time   { return e.at }

// untilGate admits everything and records the untils it is told.
type untilGate struct {
	mu     sync.Mutex
	untils []time.Time
}

func (*untilGate) AdmitPage(context.Context, string, bool) error { return nil }
func (g *untilGate) MarkExhausted(_ context.Context, _ string, until time.Time) error {
	g.mu.Lock()
	g.untils = append(g.untils, until)
	g.mu.Unlock()
	return nil
}

// TestLoopReportsSkippedItemsAndTheSourcesRetryTime: items without an
// identity are counted and logged once per sync; a temporary refusal is
// shown with its time, passed on until then (not to the end of the day),
// and nothing is asked of the source before it.
func TestLoopReportsSkippedItemsAndTheSourcesRetryTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := newTimed(10)
		src.publish(3)
		src.publishUnidentified(2)
		var logs logtest.Buffer
		gate := &untilGate{}
		s := newSyncer(t, sqlitetest.Open(t), feed.Config{Admitter: gate})
		l, err := feed.NewLoop(feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "f", Source: src}},
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		stop := runLoop(t, l)
		defer stop()
		synctest.Wait()
		st := l.Status()[0]
		if st.LastSkipped != 2 || st.Skipped != 2 || st.LastItems != 3 {
			t.Fatalf("status after the first sync %+v", st)
		}
		if n := strings.Count(logs.String(), "feed: items skipped"); n != 1 || !strings.Contains(logs.String(), "no id here: 2") {
			t.Fatalf("skipped items logged %d times:\n%s", n, logs.String())
		}

		until := start.Add(75 * time.Minute)
		src.mu.Lock()
		src.fail = retryLater{until}
		src.mu.Unlock()
		time.Sleep(30*time.Minute + 30*time.Second) // the poll at 30 is refused
		synctest.Wait()
		st = l.Status()[0]
		if st.LastStop != feed.StopNotAdmitted || !st.RetryAt.Equal(until) || !strings.Contains(st.LastError, "disabled till") ||
			!st.NextHeadPoll.Equal(until) {
			t.Fatalf("status after the refusal %+v", st)
		}
		gate.mu.Lock()
		marked := fmt.Sprint(gate.untils)
		gate.mu.Unlock()
		if marked != fmt.Sprint([]time.Time{until}) {
			t.Fatalf("the admitter was told %s; want until %v", marked, until)
		}

		src.mu.Lock()
		src.fail = nil
		src.mu.Unlock()
		time.Sleep(50 * time.Minute)
		synctest.Wait()
		if h := fmt.Sprint(src.heads(start)); h != "[0 30 75]" {
			t.Fatalf("head polls at minutes %s; want none between the refusal and its time", h)
		}
		if st := l.Status()[0]; !st.RetryAt.IsZero() || st.LastStop != feed.StopCaughtUp || st.Skipped != 4 {
			t.Fatalf("status after the source came back %+v", st)
		}
	})
}

func TestLoopCountsForgottenIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTimed(10)
		src.publish(5)
		s := newSyncer(t, sqlitetest.Open(t), feed.Config{SeenCap: 3})
		l, err := feed.NewLoop(feed.LoopConfig{Syncer: s, Feeds: []feed.LoopFeed{{Name: "f", Source: src}}})
		if err != nil {
			t.Fatal(err)
		}
		stop := runLoop(t, l)
		defer stop()
		synctest.Wait()
		if st := l.Status()[0]; st.LastItems != 5 || st.Forgotten != 2 {
			t.Fatalf("after the first sync of 5 with a cap of 3: %+v", st)
		}
		src.publish(2)
		time.Sleep(feed.DefaultPollEvery + time.Minute)
		synctest.Wait()
		if st := l.Status()[0]; st.LastItems != 2 || st.Forgotten != 4 {
			t.Fatalf("after 2 more: %+v; want 4 forgotten in all", st)
		}
	})
}
