package health_test

import (
	"testing"
	"time"

	"github.com/hostguard/hostguard/health"
)

func TestOutageProtection(t *testing.T) {
	t.Parallel()
	b := setup(t, health.Config{})
	type step struct {
		name        string
		advance     time.Duration
		host        string
		ok          bool
		wantCounted bool
		wantFails   int // of "down.example" afterwards
	}
	steps := []step{
		{"no success yet since the start: not counted", 0, "down.example", false, false, 0},
		{"still none: not counted", time.Minute, "down.example", false, false, 0},
		{"another host answers", time.Second, "up.example", true, true, 0},
		{"now a failure counts", 10 * time.Second, "down.example", false, true, 1},
		{"exactly OutageAfter after the success: counts", 20 * time.Second, "down.example", false, true, 2},
		{"a microsecond later: not counted", time.Microsecond, "down.example", false, false, 2},
		{"the same host answers", time.Minute, "down.example", true, true, 0},
		{"fails again: counts from one", time.Second, "down.example", false, true, 1},
	}
	for _, s := range steps {
		b.clock.Advance(s.advance)
		r := touch(t, b.tr, s.host, s.ok)
		if r.Counted != s.wantCounted {
			t.Fatalf("%s: counted = %v; want %v", s.name, r.Counted, s.wantCounted)
		}
		if got := status(t, b.tr, "down.example").ConsecutiveFails; got != s.wantFails {
			t.Fatalf("%s: down.example has %d consecutive fails; want %d", s.name, got, s.wantFails)
		}
	}
	st := status(t, b.tr, "down.example")
	if st.Failures != 6 || st.IgnoredFailures != 3 || st.Successes != 1 || !st.LastFailure.Equal(b.clock.Now()) {
		t.Fatalf("totals %+v; want 6 failures of which 3 ignored, 1 success, last failure now", st.Record)
	}

	// A restarted process has seen no success yet, whatever the store says.
	again := b.restart()
	b.clock.Advance(time.Second)
	if r := touch(t, again, "down.example", false); r.Counted || r.ConsecutiveFails != 1 {
		t.Fatalf("first failure after a restart: counted=%v fails=%d; want not counted, streak kept at 1", r.Counted, r.ConsecutiveFails)
	}
}

func TestIgnoredFailureOfNewNameCreatesHealthyRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, health.Config{})
	r := touch(t, b.tr, "new.example", false)
	if r.Counted || !r.Known || !r.Healthy || !r.Available || r.Failures != 1 || r.IgnoredFailures != 1 {
		t.Fatalf("ignored failure of a new name: %+v", r)
	}
}

func TestOutageAfterIsConfigurable(t *testing.T) {
	t.Parallel()
	b := setup(t, health.Config{OutageAfter: time.Second})
	touch(t, b.tr, "up.example", true)
	b.clock.Advance(time.Second)
	if r := touch(t, b.tr, "down.example", false); !r.Counted {
		t.Fatal("failure 1s after a success with OutageAfter 1s: want counted")
	}
	b.clock.Advance(time.Millisecond)
	if r := touch(t, b.tr, "down.example", false); r.Counted {
		t.Fatal("failure 1.001s after a success with OutageAfter 1s: want ignored")
	}
}

func TestNegativeOutageAfterCountsEveryFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, health.Config{OutageAfter: -1})
	for i := 1; i <= 3; i++ {
		b.clock.Advance(time.Hour)
		if r := touch(t, b.tr, "only.example", false); !r.Counted || r.ConsecutiveFails != i {
			t.Fatalf("failure %d with protection off: counted=%v fails=%d", i, r.Counted, r.ConsecutiveFails)
		}
	}
}

func TestOutageLogsOncePerEpisode(t *testing.T) {
	t.Parallel()
	b := setup(t, health.Config{})
	for range 5 {
		touch(t, b.tr, "down.example", false)
	}
	touch(t, b.tr, "up.example", true)
	b.clock.Advance(time.Minute)
	for range 5 {
		touch(t, b.tr, "down.example", false)
	}
	var outages int
	for _, l := range b.logs.lines(t) {
		if l["level"] == "INFO" && l["outage_after"] != nil {
			outages++
		}
	}
	if outages != 2 {
		t.Fatalf("%d outage log lines for two outages of 5 failures each; want 2: %v", outages, b.logs.lines(t))
	}
}

func TestConcurrentSuccessesKeepTheLatest(t *testing.T) {
	t.Parallel()
	// Successes reported out of order must not move the outage memory back:
	// the later one decides.
	b := setup(t, health.Config{})
	late := b.clock.Now()
	touch(t, b.tr, "a.example", true)
	b.clock.Advance(-20 * time.Second)
	touch(t, b.tr, "b.example", true) // an older report arriving late
	b.clock.Advance(45 * time.Second) // 25s after the later success
	if r := touch(t, b.tr, "c.example", false); !r.Counted {
		t.Fatalf("failure 25s after the latest success (at %v) was ignored", late)
	}
}
