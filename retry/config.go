package retry

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// DefaultLadder is the delay ladder for failure classes without one of
// their own: step n is the wait after the n-th failure in a row, and the
// last step repeats.
var DefaultLadder = []time.Duration{
	30 * time.Minute,
	2 * time.Hour,
	8 * time.Hour,
	24 * time.Hour,
	7 * 24 * time.Hour,
	30 * 24 * time.Hour,
}

// The defaults of Config's fields, which a zero field means.
const (
	DefaultJitter             = 0.1
	DefaultRetryShare         = 0.3
	DefaultReactivateWithin   = 10 * time.Minute
	DefaultObserveStep        = 1
	DefaultObserveMaxPriority = 10
	DefaultExpiriesPerFailure = 3
	DefaultClaimPoll          = 2 * time.Second
	DefaultKeepDone           = 30 * 24 * time.Hour
	DefaultWakeJitter         = time.Minute
)

// ClassLeaseExpired is the failure class recorded when an item's lease runs
// out Config.ExpiriesPerFailure times in a row: a poison item that kills
// its workers waits on this class's ladder instead of being handed out
// again and again.
const ClassLeaseExpired = "lease_expired"

// Limits on claims and leases.
const (
	// MaxClaim is the most items one Claim hands out.
	MaxClaim = 1000
	// MaxLease is the longest lease (and extension) accepted.
	MaxLease = 30 * 24 * time.Hour
	// MaxClaimWait is the longest a claim may wait for work.
	MaxClaimWait = 5 * time.Minute
	// maxWakeJitter bounds Config.WakeJitter: a wake spread over longer
	// is hardly a wake.
	maxWakeJitter = 24 * time.Hour
	// maxLadderStep bounds ladder steps so now+delay cannot overflow.
	maxLadderStep = 10 * 365 * 24 * time.Hour
)

// Config tunes a Scheduler. The zero Config is valid: every zero field means
// its default, and a negative value turns off what can be turned off.
type Config struct {
	// Default is the delay ladder for classes not in Classes, stepped by
	// failures in a row. Nil or empty means DefaultLadder (30 min, 2 h,
	// 8 h, 1 d, 7 d, 30 d). Every step must be positive and at most ten
	// years.
	Default Ladder `json:"default,omitempty"`
	// Classes gives failure classes schedules of their own: a ladder (same
	// rules as Default; an empty ladder is an error) and what steps it
	// (failures in a row, or distinct sources). Nil means every class uses
	// Default. The class ClassLeaseExpired may be given a schedule too.
	// The daemon's configuration file decodes straight into it:
	// {"hash_mismatch": {"ladder": ["24h", "168h", "720h"], "escalate": "sources"}}.
	Classes map[string]ClassConfig `json:"classes,omitempty"`
	// Jitter spreads every delay uniformly over ±Jitter of itself, so that
	// items failing together do not come due together. Zero means
	// DefaultJitter (±10 %); negative turns jitter off (exact ladder
	// delays). Must be below 1.
	Jitter float64
	// RetryShare caps the share of one claim that items already tried may
	// take while never-tried items are due as well. Zero means
	// DefaultRetryShare (0.3); 1 means no cap. Must be in [0, 1]. See
	// Scheduler.Claim for the rounding.
	RetryShare float64
	// ReactivateWithin is how soon Observe makes a waiting item due. Zero
	// means DefaultReactivateWithin (10 minutes); negative is an error.
	ReactivateWithin time.Duration
	// ObserveStep is how much each Observe raises a waiting item's priority
	// unless ObserveParams.Boost says otherwise. Zero means
	// DefaultObserveStep (1); negative is an error.
	ObserveStep int
	// ObserveMaxPriority is the highest priority observations can raise an
	// item to; an item already above it keeps its priority. Zero means
	// DefaultObserveMaxPriority (10).
	ObserveMaxPriority int
	// ExpiriesPerFailure is how many leases on one item may run out in a
	// row before the next expiry counts as a failure of class
	// ClassLeaseExpired (that expiry included). Zero means
	// DefaultExpiriesPerFailure (3); negative is an error.
	ExpiriesPerFailure int
	// ClaimPoll is how often a waiting claim (ClaimParams.Wait) looks for
	// work again although nothing woke it. Wake-ups come from the store:
	// PostgreSQL notifies every node, SQLite every handle in the process;
	// the poll covers what they cannot tell, such as another process
	// writing the same SQLite file. Zero means DefaultClaimPoll (2 s);
	// negative turns the poll off (a waiting claim then ends early only
	// when woken, or when an item comes due by time).
	ClaimPoll time.Duration
	// KeepDone is how long a done item is kept after its last change (its
	// success, or a later sighting) before Scheduler.Prune deletes it. A
	// kept done item is what makes Add of the same id a no-op; once pruned,
	// the id can be added as new work. Zero means DefaultKeepDone (30
	// days); negative keeps done items for ever (Prune deletes nothing).
	KeepDone time.Duration
	// SyncSightings makes every sighting wait, before Observe returns,
	// until the store has it on disk, as every other write does. By
	// default a sighting of items that already exist (the change that
	// Observe and ObserveMany make to known items, with or without a
	// source; a call that adds an item waits) is acknowledged once it is
	// committed, before the disk has it: PostgreSQL commits it with
	// synchronous_commit off, so a crash of the database server, or of
	// its machine, within a fraction of a second of the sighting can lose
	// it (never an item, an add, a claim or a settlement: those always
	// wait). A restart or kill -9 of the
	// program loses nothing. SQLite ignores the setting: its commits
	// never wait for the disk (synchronous=NORMAL). See "Sightings and
	// the disk" in docs/design.md.
	SyncSightings bool
	// WakeJitter spreads the items a host's recovery wakes
	// (Scheduler.WakeHost) over this long: each becomes due at a uniform
	// point between now and now+WakeJitter, so that a host that comes back
	// is not met by all its parked work at once. Zero means
	// DefaultWakeJitter (one minute); negative turns the spread off (all
	// due at once). At most a day.
	WakeJitter time.Duration
	// Now is the clock for every time decision. Nil means the store's
	// cluster clock when it keeps one (store/postgres: the database's, so
	// that nodes whose clocks disagree or jump still agree on lease ends
	// and due times), else time.Now.
	Now func() time.Time
	// Rand returns uniform numbers in [0, 1) for jitter and for rounding
	// the retry share. Nil means math/rand/v2's Float64. It must be safe
	// for concurrent use if the Scheduler is.
	Rand func() float64
}

func (c Config) withDefaults() Config {
	if len(c.Default) == 0 {
		c.Default = DefaultLadder
	}
	switch {
	case c.Jitter == 0:
		c.Jitter = DefaultJitter
	case c.Jitter < 0:
		c.Jitter = 0
	}
	if c.RetryShare == 0 {
		c.RetryShare = DefaultRetryShare
	}
	if c.ReactivateWithin == 0 {
		c.ReactivateWithin = DefaultReactivateWithin
	}
	if c.ObserveStep == 0 {
		c.ObserveStep = DefaultObserveStep
	}
	if c.ObserveMaxPriority == 0 {
		c.ObserveMaxPriority = DefaultObserveMaxPriority
	}
	if c.ExpiriesPerFailure == 0 {
		c.ExpiriesPerFailure = DefaultExpiriesPerFailure
	}
	if c.KeepDone == 0 {
		c.KeepDone = DefaultKeepDone
	}
	switch {
	case c.WakeJitter == 0:
		c.WakeJitter = DefaultWakeJitter
	case c.WakeJitter < 0:
		c.WakeJitter = 0
	}
	c.WakeJitter = c.WakeJitter.Truncate(time.Microsecond)
	if c.ClaimPoll == 0 {
		c.ClaimPoll = DefaultClaimPoll
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	return c
}

// Validate reports the first field New would refuse, as an *InputError
// whose Field is the setting's snake_case name ("jitter",
// "classes.no_peers[1]").
func (c Config) Validate() error {
	return c.withDefaults().validate()
}

// validate names the first bad field of a defaulted Config.
func (c Config) validate() error {
	if err := checkLadder("default", c.Default); err != nil {
		return err
	}
	for _, class := range slices.Sorted(maps.Keys(c.Classes)) {
		cc := c.Classes[class]
		field := "classes." + classField(class)
		if err := checkClass(class); err != nil {
			return invalid(field, "class name %s", err.(*InputError).Reason)
		}
		if len(cc.Ladder) == 0 {
			return invalid(field+".ladder", "is empty (leave the class out to use the default ladder)")
		}
		if err := checkLadder(field+".ladder", cc.Ladder); err != nil {
			return err
		}
		switch cc.Escalate {
		case "", ByFailures, BySources:
		default:
			return invalid(field+".escalate", "%q is neither %q nor %q", cc.Escalate, ByFailures, BySources)
		}
	}
	if !(c.Jitter >= 0 && c.Jitter < 1) {
		return invalid("jitter", "%v is not below 1 (negative turns jitter off)", c.Jitter)
	}
	if !(c.RetryShare > 0 && c.RetryShare <= 1) {
		return invalid("retry_share", "%v is outside [0, 1] (zero means the default %v)", c.RetryShare, DefaultRetryShare)
	}
	if c.ReactivateWithin < 0 {
		return invalid("reactivate_within", "%v is negative", c.ReactivateWithin)
	}
	if c.ReactivateWithin > maxLadderStep {
		return invalid("reactivate_within", "%v is more than ten years", c.ReactivateWithin)
	}
	if c.ObserveStep < 0 {
		return invalid("observe_step", "%d is negative", c.ObserveStep)
	}
	if err := checkPriority("observe_step", c.ObserveStep); err != nil {
		return err
	}
	if err := checkPriority("observe_max_priority", c.ObserveMaxPriority); err != nil {
		return err
	}
	if c.KeepDone > maxKeepDone {
		return invalid("keep_done", "%v is more than a hundred years", c.KeepDone)
	}
	if c.WakeJitter > maxWakeJitter {
		return invalid("wake_jitter", "%v is more than %v", c.WakeJitter, maxWakeJitter)
	}
	if c.ExpiriesPerFailure < 0 {
		return invalid("expiries_per_failure", "%d is negative", c.ExpiriesPerFailure)
	}
	return nil
}

// classField spells a class as a path segment: plain names as they are,
// anything else quoted so that the path stays readable.
func classField(class string) string {
	for _, r := range class {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return strconv.Quote(class)
		}
	}
	if class == "" {
		return `""`
	}
	return class
}

func checkLadder(field string, ladder []time.Duration) error {
	for i, d := range ladder {
		f := field + "[" + strconv.Itoa(i) + "]"
		if d <= 0 {
			return invalid(f, "is %v; ladder steps must be positive", d)
		}
		if d > maxLadderStep {
			return invalid(f, "is %v, more than ten years", d)
		}
	}
	return nil
}
