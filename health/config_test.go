package health_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/health"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := (health.Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	bad := []struct {
		cfg  health.Config
		want string
	}{
		{health.Config{Schedule: []time.Duration{time.Second, 0}}, "Config.Schedule[1]"},
		{health.Config{Schedule: []time.Duration{-time.Second}}, "Config.Schedule[0]"},
		{health.Config{Schedule: []time.Duration{400 * 24 * time.Hour}}, "Config.Schedule[0]"},
		{health.Config{Schedule: make([]time.Duration, 65)}, "Config.Schedule has 65 steps"},
	}
	for _, c := range bad {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%v): %v; want an error naming %q", c.cfg.Schedule, err, c.want)
		}
	}
}

func TestNewPanicsOnProgrammingErrors(t *testing.T) {
	t.Parallel()
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: want a panic", what)
			}
		}()
		f()
	}
	mustPanic("nil store", func() { health.New(nil, health.Config{}) })
	b := setup(t, health.Config{})
	mustPanic("bad schedule", func() { health.New(b.store, health.Config{Schedule: []time.Duration{0}}) })
}

func TestScheduleIsCopied(t *testing.T) {
	t.Parallel()
	sched := []time.Duration{time.Minute, 2 * time.Minute}
	b := setup(t, health.Config{Schedule: sched, OutageAfter: -1})
	sched[0] = time.Hour
	if r := touch(t, b.tr, "a.example", false); r.RetryIn != time.Minute {
		t.Fatalf("changing the caller's slice changed the Tracker: retry in %v; want 1m", r.RetryIn)
	}
}

func TestBackoffFor(t *testing.T) {
	t.Parallel()
	want := []time.Duration{0, 5, 10, 20, 30, 60, 300, 3600, 3600, 3600}
	for n, w := range want {
		if got := health.BackoffFor(nil, n); got != w*time.Second {
			t.Errorf("BackoffFor(default, %d) = %v; want %v", n, got, w*time.Second)
		}
	}
}
