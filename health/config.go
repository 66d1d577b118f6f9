package health

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultSchedule is the backoff ladder used when Config.Schedule is empty:
// the first counted failure in a row backs off 5 s, the second 10 s, then
// 20 s, 30 s, 60 s, 300 s, and the seventh and every later one 3600 s.
// New copies it; changing it later affects only Trackers made afterwards.
var DefaultSchedule = []time.Duration{
	5 * time.Second,
	10 * time.Second,
	20 * time.Second,
	30 * time.Second,
	60 * time.Second,
	300 * time.Second,
	3600 * time.Second,
}

// DefaultOutageAfter is the default Config.OutageAfter.
const DefaultOutageAfter = 30 * time.Second

// LogFromFails is the streak length from which every counted failure logs
// one line. Shorter streaks are routine on the open internet and stay quiet.
const LogFromFails = 4

// Limits of Config.Schedule. Beyond them the value is almost certainly a unit
// slip (nanoseconds for seconds, a ladder built in a loop).
const (
	MaxScheduleSteps = 64
	MaxStep          = 366 * 24 * time.Hour
)

// Config tunes a Tracker. The zero Config is ready to use: every zero field
// takes the default its comment names.
type Config struct {
	// Schedule is the backoff ladder: the n-th counted failure in a row
	// backs off Schedule[min(n, len(Schedule))-1], so the last step repeats.
	// Every step must be positive and at most a year; at most 64 steps.
	// Empty (the zero value) means DefaultSchedule: 5s, 10s, 20s, 30s, 60s,
	// 300s, 3600s.
	Schedule []time.Duration

	// OutageAfter is how recent this Tracker's last success of any name must
	// be for a failure to count. When the last success is older, or there
	// has been none since the Tracker was made, the local network is more
	// likely down than the host, so the failure is recorded (LastFailure,
	// Failures, IgnoredFailures) but does not grow the streak or set a
	// backoff. Zero means DefaultOutageAfter (30s). A negative value turns
	// outage protection off: every failure counts. Turn it off for a program
	// that talks to a single host, whose failures would otherwise never
	// count.
	OutageAfter time.Duration

	// Now is the clock for every time decision. Nil means the store's
	// cluster clock when it keeps one (store/postgres: the database's, so
	// that a backoff one node records ends at the same moment for all),
	// else time.Now.
	Now func() time.Time

	// Logger receives one line per counted failure once a name's streak
	// reaches LogFromFails (4), and one line when outage protection starts
	// ignoring failures. Nil means slog.Default().
	Logger *slog.Logger
}

// Validate checks c as New does and returns an *InputError naming the
// first bad field as the configuration file spells it ("schedule",
// "schedule[1]").
func (c Config) Validate() error {
	if len(c.Schedule) > MaxScheduleSteps {
		return invalid("schedule", "has %d steps, more than %d", len(c.Schedule), MaxScheduleSteps)
	}
	for i, d := range c.Schedule {
		if d <= 0 || d > MaxStep {
			return invalid(fmt.Sprintf("schedule[%d]", i), "is %v; every step must be positive and at most %v", d, MaxStep)
		}
	}
	return nil
}

// withDefaults returns c with every zero field set to its default. The
// schedule is copied so that later changes to the caller's slice cannot
// change a running Tracker.
func (c Config) withDefaults() Config {
	if len(c.Schedule) == 0 {
		c.Schedule = DefaultSchedule
	}
	c.Schedule = append([]time.Duration(nil), c.Schedule...)
	if c.OutageAfter == 0 {
		c.OutageAfter = DefaultOutageAfter
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// BackoffFor returns the backoff that the n-th counted failure in a row
// sets under schedule (DefaultSchedule when empty); zero for n < 1.
func BackoffFor(schedule []time.Duration, n int) time.Duration {
	if len(schedule) == 0 {
		schedule = DefaultSchedule
	}
	if n < 1 {
		return 0
	}
	return schedule[min(n, len(schedule))-1]
}

var errNilStore = errors.New("health: New needs a non-nil Store")
