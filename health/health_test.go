package health_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/health"
)

// noOutage turns outage protection off, for tests about the ladder alone.
var noOutage = health.Config{OutageAfter: -1}

func TestLadderSteps(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	type step struct {
		advance       time.Duration
		ok            bool
		wantFails     int
		wantRetryIn   time.Duration
		wantHealthy   bool
		wantAvailable bool
	}
	steps := []step{
		{0, false, 1, 5 * time.Second, false, false},
		{4 * time.Second, false, 2, 10 * time.Second, false, false}, // still in backoff: counts anyway
		{10 * time.Second, false, 3, 20 * time.Second, false, false},
		{20 * time.Second, false, 4, 30 * time.Second, false, false},
		{time.Minute, false, 5, 60 * time.Second, false, false},
		{time.Minute, false, 6, 300 * time.Second, false, false},
		{time.Minute, false, 7, 3600 * time.Second, false, false},
		{time.Minute, false, 8, 3600 * time.Second, false, false},
		{2 * time.Hour, false, 9, 3600 * time.Second, false, false},
		{2 * time.Hour, true, 0, 0, true, true},
		{time.Second, false, 1, 5 * time.Second, false, false},
	}
	for i, s := range steps {
		b.clock.Advance(s.advance)
		r := touch(t, b.tr, "Files.Example", s.ok)
		if !r.Counted || r.ConsecutiveFails != s.wantFails || r.RetryIn != s.wantRetryIn ||
			r.Healthy != s.wantHealthy || r.Available != s.wantAvailable {
			t.Fatalf("step %d (+%v ok=%v): got counted=%v fails=%d retryIn=%v healthy=%v available=%v; want fails=%d retryIn=%v healthy=%v available=%v",
				i, s.advance, s.ok, r.Counted, r.ConsecutiveFails, r.RetryIn, r.Healthy, r.Available,
				s.wantFails, s.wantRetryIn, s.wantHealthy, s.wantAvailable)
		}
		if want := b.clock.Now().Add(s.wantRetryIn); s.wantRetryIn > 0 && !r.BackoffUntil.Equal(want) {
			t.Fatalf("step %d: backoff until %v; want %v", i, r.BackoffUntil, want)
		}
	}
	st := status(t, b.tr, "files.example")
	if st.Successes != 1 || st.Failures != 10 || st.IgnoredFailures != 0 || st.Display != "Files.Example" {
		t.Fatalf("totals: %+v; want 1 success, 10 failures, display Files.Example", st.Record)
	}
}

func TestViewsOverTime(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	touch(t, b.tr, "a.example", false)
	touch(t, b.tr, "a.example", false) // backoff 10s
	check := func(wantHealthy, wantAvailable bool) {
		t.Helper()
		h, err := b.tr.Healthy(bg(), "A.EXAMPLE")
		if err != nil || h != wantHealthy {
			t.Fatalf("Healthy = %v, %v; want %v", h, err, wantHealthy)
		}
		a, err := b.tr.Available(bg(), " a.example ")
		if err != nil || a != wantAvailable {
			t.Fatalf("Available = %v, %v; want %v", a, err, wantAvailable)
		}
	}
	check(false, false)
	b.clock.Advance(10*time.Second - time.Microsecond)
	check(false, false)
	b.clock.Advance(time.Microsecond) // backoff ends: available, still unhealthy
	check(false, true)
	if st := status(t, b.tr, "a.example"); st.RetryIn != 0 || !st.Known {
		t.Fatalf("status after the backoff: %+v", st)
	}
	touch(t, b.tr, "a.example", true)
	check(true, true)
}

func TestUnknownNameIsHealthyAndAvailable(t *testing.T) {
	t.Parallel()
	b := setup(t, health.Config{})
	st := status(t, b.tr, "  Never.Seen ")
	if st.Known || !st.Healthy || !st.Available || st.Name != "never.seen" || st.Display != "Never.Seen" {
		t.Fatalf("unknown name: %+v", st)
	}
	for _, f := range []func() (bool, error){
		func() (bool, error) { return b.tr.Healthy(bg(), "never.seen") },
		func() (bool, error) { return b.tr.Available(bg(), "never.seen") },
	} {
		if ok, err := f(); err != nil || !ok {
			t.Fatalf("unknown name: %v, %v; want true", ok, err)
		}
	}
}

func TestStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	for range 3 {
		touch(t, b.tr, "a.example", false)
	}
	again := b.restart()
	if st := status(t, again, "a.example"); st.ConsecutiveFails != 3 || st.Available {
		t.Fatalf("after restart: %+v; want 3 fails, in backoff", st)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	touch(t, b.tr, "a.example", false)
	if del, err := b.tr.Reset(bg(), "A.example"); err != nil || !del {
		t.Fatalf("Reset = %v, %v; want true", del, err)
	}
	if st := status(t, b.tr, "a.example"); st.Known || !st.Healthy || !st.Available {
		t.Fatalf("after Reset: %+v", st)
	}
	if del, err := b.tr.Reset(bg(), "a.example"); err != nil || del {
		t.Fatalf("second Reset = %v, %v; want false", del, err)
	}
	if _, err := b.tr.Reset(bg(), " "); err == nil {
		t.Fatal("Reset of an empty name: want an error")
	}
}

func TestConcurrentTouchesAreExact(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				name := fmt.Sprintf("HOST-%d.example", i%3)
				if err := b.tr.Touch(bg(), name, w%2 == 0); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var ok, fail int64
	for i := range 3 {
		st := status(t, b.tr, fmt.Sprintf("host-%d.example", i))
		ok += st.Successes
		fail += st.Failures
	}
	if ok != workers/2*each || fail != workers/2*each {
		t.Fatalf("totals: %d successes, %d failures; want %d each", ok, fail, workers/2*each)
	}
}
