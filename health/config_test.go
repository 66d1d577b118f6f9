package health_test

import (
	"errors"
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
		{health.Config{Schedule: []time.Duration{time.Second, 0}}, "schedule[1]"},
		{health.Config{Schedule: []time.Duration{-time.Second}}, "schedule[0]"},
		{health.Config{Schedule: []time.Duration{400 * 24 * time.Hour}}, "schedule[0]"},
		{health.Config{Schedule: make([]time.Duration, 65)}, "schedule"},
	}
	for _, c := range bad {
		err := c.cfg.Validate()
		var ie *health.InputError
		if !errors.As(err, &ie) || ie.Field != c.want || !errors.Is(err, health.ErrInvalid) || !strings.HasPrefix(err.Error(), "health: "+c.want+": ") {
			t.Errorf("Validate(%v): %v; want an InputError naming %q", c.cfg.Schedule, err, c.want)
		}
	}
	if err := (health.Config{Schedule: make([]time.Duration, 65)}).Validate(); err == nil || !strings.Contains(err.Error(), "has 65 steps") {
		t.Errorf("Validate(65 steps): %v; want it to say how many", err)
	}
}

func TestNewReturnsErrors(t *testing.T) {
	t.Parallel()
	if tr, err := health.New(nil, health.Config{}); err == nil || tr != nil {
		t.Errorf("New(nil store) = %v, %v; want an error", tr, err)
	}
	b := setup(t, health.Config{})
	tr, err := health.New(b.store, health.Config{Schedule: []time.Duration{0}})
	var ie *health.InputError
	if !errors.As(err, &ie) || ie.Field != "schedule[0]" || tr != nil {
		t.Errorf("New(bad schedule) = %v, %v; want the InputError of Validate", tr, err)
	}
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
