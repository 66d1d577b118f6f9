package budget

import (
	"fmt"
	"strings"
	"time"

	"github.com/hostguard/hostguard/internal/inputtext"
)

// Defaults. Each is what a zero (or nil) config field turns into.
const (
	// DefaultDailyLimit is a source's daily API limit when neither the
	// owner nor the source says otherwise: the strictest common tier.
	DefaultDailyLimit = 1000
	// DefaultPace is the least time between two requests to one source.
	DefaultPace = 3 * time.Second
	// DefaultReservePercent is what ShareUnlimited keeps back for the
	// owner's own use of a source.
	DefaultReservePercent = 10
	// DefaultHeadPollEvery is the head-poll interval when a source's
	// allowance has room for it.
	DefaultHeadPollEvery = 30 * time.Minute
	// DefaultKeepDays is how many days of usage Prune keeps.
	DefaultKeepDays = 35

	// DefaultValidation, DefaultCandidate, DefaultDescriptor and
	// DefaultBytes are the cluster-wide daily allowances of Limits.
	DefaultValidation = 100
	DefaultCandidate  = 20
	DefaultDescriptor = 20
	DefaultBytes      = 512 << 20
)

// Maxima of the numbers a Budget takes. Beyond them a value is a unit slip
// or an attack, and accepting it would let sums overflow.
const (
	// MaxAmount bounds every amount: daily limits, allowances, costs,
	// settled actuals, and so every stored counter and reported figure.
	// 2^53 bytes are 8 PiB, far beyond any day's traffic, and 2^53 is the
	// largest integer that JSON readers using floating point keep exact.
	// Counters that only record stop growing at MaxAmount rather than
	// overflow, and sums in a Report stop at it too.
	MaxAmount int64 = 1 << 53
	// MaxPace bounds Source.Pace: one request a day is the gentlest
	// schedule that still makes sense.
	MaxPace = 24 * time.Hour
	// MaxHeadPollEvery bounds Config.HeadPollEvery.
	MaxHeadPollEvery = 24 * time.Hour
	// MaxKeepDays bounds Config.KeepDays (ten years).
	MaxKeepDays = 3660
	// MaxSourceNameBytes bounds source names: they become store keys and
	// log fields. See ValidateSourceName for the whole rule.
	MaxSourceNameBytes = 200
)

// NoPace is a Source.Pace that turns pacing off for a source. Any negative
// Pace does the same, as "off" is spelled everywhere in hostguard; NoPace
// is the one Sources reports.
const NoPace time.Duration = -1

// Share is how much of a source's daily limit background work may spend.
type Share int

const (
	// ShareNormal spends 10 % of the daily limit. It is the zero value.
	ShareNormal Share = iota
	// ShareGentle spends 5 %.
	ShareGentle
	// ShareUnlimited spends everything but Source.ReservePercent.
	ShareUnlimited
)

// String returns "normal", "gentle" or "unlimited".
func (s Share) String() string {
	switch s {
	case ShareNormal:
		return "normal"
	case ShareGentle:
		return "gentle"
	case ShareUnlimited:
		return "unlimited"
	}
	return fmt.Sprintf("share(%d)", int(s))
}

// ParseShare returns the share named s ("gentle", "normal", "unlimited";
// empty means normal).
func ParseShare(s string) (Share, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "normal":
		return ShareNormal, nil
	case "gentle":
		return ShareGentle, nil
	case "unlimited":
		return ShareUnlimited, nil
	}
	return 0, invalid("share", "unknown share %q; want gentle, normal or unlimited", clip(s))
}

// Int returns a pointer to n, for the optional numbers in Source and Limits
// (where nil means "use the default" and 0 means "none").
func Int(n int64) *int64 { return &n }

// Source is one remote source (an indexer, an API) whose goodwill the
// budget protects.
type Source struct {
	// Name identifies the source in admissions, reports and the store.
	// Required; see ValidateSourceName.
	Name string `json:"name"`
	// OwnerDailyLimit is the daily API limit the owner says the source
	// allows. nil: not set, ReportedDailyLimit or DefaultDailyLimit applies.
	// 0 disables all background work on the source. At most MaxAmount.
	OwnerDailyLimit *int64 `json:"owner_daily_limit,omitempty"`
	// ReportedDailyLimit is the daily limit the source itself reports (for
	// example in a Newznab caps answer). nil: not reported. Used only when
	// OwnerDailyLimit is nil. At most MaxAmount. See Budget.ReportLimit.
	ReportedDailyLimit *int64 `json:"reported_daily_limit,omitempty"`
	// Share is the profile: the zero value is ShareNormal (10 %).
	Share Share `json:"share"`
	// ReservePercent is the part of the daily limit that ShareUnlimited
	// leaves to the owner. nil: DefaultReservePercent (10). 0 keeps
	// nothing back. Ignored by the other shares.
	ReservePercent *int64 `json:"reserve_percent,omitempty"`
	// Pace is the least time between two requests to this source, across
	// all nodes. 0: DefaultPace (3 s). Negative (NoPace): no pacing. At
	// most MaxPace (24 h).
	Pace time.Duration `json:"pace"`
}

// Limits are the cluster-wide daily allowances. A nil field takes its
// default; a zero field disables that work. No field may be negative or
// above MaxAmount.
type Limits struct {
	// Total caps the sum of all sources' background requests. nil: the sum
	// of the sources' allowances (so it never binds). 0 stops all source
	// work.
	Total *int64 `json:"total,omitempty"`
	// Validation requests per day. nil: DefaultValidation (100).
	Validation *int64 `json:"validation,omitempty"`
	// Candidate checks per day. nil: DefaultCandidate (20).
	Candidate *int64 `json:"candidate,omitempty"`
	// Descriptor grabs per day. nil: DefaultDescriptor (20).
	Descriptor *int64 `json:"descriptor,omitempty"`
	// Bytes that reservations may hold per day. nil: DefaultBytes (512 MiB).
	Bytes *int64 `json:"bytes,omitempty"`
}

// Config configures a Budget. The zero value is usable: no sources, default
// cluster-wide allowances.
type Config struct {
	// Sources are the sources known at start. More can be added with
	// SetSource. Names must be unique.
	Sources []Source
	// Limits are the cluster-wide allowances; see Limits for defaults.
	Limits Limits
	// Paused starts with all background work paused (see Budget.Pause).
	// Default false.
	Paused bool
	// HeadPollEvery is the head-poll interval a source gets when its
	// allowance has room for it (see PollInterval). 0: DefaultHeadPollEvery
	// (30 min). At most MaxHeadPollEvery (24 h).
	HeadPollEvery time.Duration
	// KeepDays is how many days of usage and grants Prune keeps, today
	// included. 0: DefaultKeepDays (35). At most MaxKeepDays.
	KeepDays int
	// Now is the clock for every time decision. nil: the store's cluster
	// clock when it keeps one (store/postgres: the database's, so that
	// nodes whose clocks disagree or jump still pace a source alike), else
	// time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.HeadPollEvery == 0 {
		c.HeadPollEvery = DefaultHeadPollEvery
	}
	if c.KeepDays == 0 {
		c.KeepDays = DefaultKeepDays
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks c as New does and returns an *InputError naming the first
// bad field as the configuration file spells it ("head_poll_every",
// "total", "sources[2].share").
func (c Config) Validate() error {
	switch {
	case c.HeadPollEvery < 0 || c.HeadPollEvery > MaxHeadPollEvery:
		return invalid("head_poll_every", "is %v; want 0 (default %v) up to %v", c.HeadPollEvery, DefaultHeadPollEvery, MaxHeadPollEvery)
	case c.KeepDays < 0 || c.KeepDays > MaxKeepDays:
		return invalid("keep_days", "is %d; want 0 (default %d) up to %d", c.KeepDays, DefaultKeepDays, MaxKeepDays)
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	seen := make(map[string]int, len(c.Sources))
	for i, s := range c.Sources {
		at := fmt.Sprintf("sources[%d]", i)
		if err := s.Validate(); err != nil {
			return under(at, err)
		}
		if j, dup := seen[s.Name]; dup {
			return invalid(at+".name", "source %q is listed twice (also sources[%d])", s.Name, j)
		}
		seen[s.Name] = i
	}
	return nil
}

// Validate checks l as SetLimits does and returns an *InputError naming the
// bad field ("total", "validation", "candidate", "descriptor", "bytes").
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    *int64
	}{{"total", l.Total}, {"validation", l.Validation}, {"candidate", l.Candidate}, {"descriptor", l.Descriptor}, {"bytes", l.Bytes}} {
		if f.v != nil {
			if err := checkAmount(f.name, *f.v, "nil (default), 0 (disabled)"); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkAmount applies the range 0..MaxAmount to an amount; low says what
// the small values mean.
func checkAmount(field string, v int64, low string) error {
	if v < 0 || v > MaxAmount {
		return invalid(field, "is %d; want %s or more, up to %d", v, low, MaxAmount)
	}
	return nil
}

// Validate checks s as SetSource does and returns an *InputError naming the
// bad field ("name", "owner_daily_limit", "reported_daily_limit", "share",
// "reserve_percent", "pace").
func (s Source) Validate() error {
	if err := ValidateSourceName(s.Name); err != nil {
		return err
	}
	if s.OwnerDailyLimit != nil {
		if err := checkAmount("owner_daily_limit", *s.OwnerDailyLimit, "nil (not set), 0 (disabled)"); err != nil {
			return err
		}
	}
	if s.ReportedDailyLimit != nil {
		if err := checkAmount("reported_daily_limit", *s.ReportedDailyLimit, "nil (not reported), 0"); err != nil {
			return err
		}
	}
	if s.Share < ShareNormal || s.Share > ShareUnlimited {
		return invalid("share", "is %d; want ShareNormal, ShareGentle or ShareUnlimited", int(s.Share))
	}
	if s.ReservePercent != nil && (*s.ReservePercent < 0 || *s.ReservePercent > 100) {
		return invalid("reserve_percent", "is %d; want nil (default %d) or 0 to 100", *s.ReservePercent, DefaultReservePercent)
	}
	if s.Pace > MaxPace {
		return invalid("pace", "is %v; want 0 (default %v), negative (no pacing) or up to %v", s.Pace, DefaultPace, MaxPace)
	}
	return nil
}

// normalized returns s as a Budget keeps it: every negative Pace is
// NoPace.
func (s Source) normalized() Source {
	if s.Pace < 0 {
		s.Pace = NoPace
	}
	return s
}

// ValidateSourceName checks a source name and returns an *InputError with
// Field "name" if it is empty, longer than MaxSourceNameBytes bytes, has
// surrounding white space, or is not clean text (a NUL byte, invalid UTF-8
// or a control character). Feed names follow the same rule, since a feed
// is paid from the source of its name.
func ValidateSourceName(name string) error { return checkName("name", name) }

func checkName(field, name string) error {
	switch {
	case name == "":
		return invalid(field, "is empty")
	case len(name) > MaxSourceNameBytes:
		return invalid(field, "is %d bytes, longer than %d", len(name), MaxSourceNameBytes)
	}
	if err := inputtext.Check(name); err != nil {
		return invalid(field, "%v", err)
	}
	if strings.TrimSpace(name) != name {
		return invalid(field, "%q has surrounding space", name)
	}
	return nil
}

// clip shortens a value quoted in a reason.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
