package budget

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
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

	DefaultValidation = 100
	DefaultCandidate  = 20
	DefaultDescriptor = 20
	DefaultBytes      = 512 << 20
)

// NoPace is the Source.Pace that turns pacing off for a source.
const NoPace time.Duration = -1

// maxName bounds source names: they become store keys and log fields.
const maxName = 200

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
	return 0, fmt.Errorf("budget: unknown share %q (want gentle, normal or unlimited)", s)
}

// Int returns a pointer to n, for the optional numbers in Source and Limits
// (where nil means "use the default" and 0 means "none").
func Int(n int64) *int64 { return &n }

// Source is one remote source (an indexer, an API) whose goodwill the
// budget protects.
type Source struct {
	// Name identifies the source in admissions, reports and the store.
	// Required; at most 200 characters, no control characters.
	Name string `json:"name"`
	// OwnerDailyLimit is the daily API limit the owner says the source
	// allows. nil: not set, ReportedDailyLimit or DefaultDailyLimit applies.
	// 0 disables all background work on the source.
	OwnerDailyLimit *int64 `json:"owner_daily_limit,omitempty"`
	// ReportedDailyLimit is the daily limit the source itself reports (for
	// example in a Newznab caps answer). nil: not reported. Used only when
	// OwnerDailyLimit is nil. See Budget.ReportLimit.
	ReportedDailyLimit *int64 `json:"reported_daily_limit,omitempty"`
	// Share is the profile: the zero value is ShareNormal (10 %).
	Share Share `json:"share"`
	// ReservePercent is the part of the daily limit that ShareUnlimited
	// leaves to the owner. nil: DefaultReservePercent (10). 0 keeps
	// nothing back. Ignored by the other shares.
	ReservePercent *int64 `json:"reserve_percent,omitempty"`
	// Pace is the least time between two requests to this source, across
	// all nodes. 0: DefaultPace (3 s). NoPace turns pacing off.
	Pace time.Duration `json:"pace"`
}

// Limits are the cluster-wide daily allowances. A nil field takes its
// default; a zero field disables that work.
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
	// (30 min). At most 24 h.
	HeadPollEvery time.Duration
	// KeepDays is how many days of usage and grants Prune keeps, today
	// included. 0: DefaultKeepDays (35).
	KeepDays int
	// Now is the clock for every time decision. nil: time.Now.
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

func (c Config) validate() error {
	if c.HeadPollEvery < 0 || c.HeadPollEvery > 24*time.Hour {
		return fmt.Errorf("budget: Config.HeadPollEvery is %v; want between 0 (default) and 24h", c.HeadPollEvery)
	}
	if c.KeepDays < 0 {
		return fmt.Errorf("budget: Config.KeepDays is %d; want 0 (default) or more", c.KeepDays)
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	seen := make(map[string]bool, len(c.Sources))
	for i, s := range c.Sources {
		if err := s.validate(); err != nil {
			return fmt.Errorf("%w (Config.Sources[%d])", err, i)
		}
		if seen[s.Name] {
			return fmt.Errorf("budget: Config.Sources[%d]: source %q is listed twice", i, s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

func (l Limits) validate() error {
	for _, f := range []struct {
		name string
		v    *int64
	}{{"Total", l.Total}, {"Validation", l.Validation}, {"Candidate", l.Candidate}, {"Descriptor", l.Descriptor}, {"Bytes", l.Bytes}} {
		if f.v != nil && *f.v < 0 {
			return fmt.Errorf("budget: Limits.%s is %d; want nil (default), 0 (disabled) or more", f.name, *f.v)
		}
	}
	return nil
}

// Validate checks s as SetSource does, naming the bad field.
func (s Source) Validate() error { return s.validate() }

func (s Source) validate() error {
	if err := validName(s.Name); err != nil {
		return err
	}
	if s.OwnerDailyLimit != nil && *s.OwnerDailyLimit < 0 {
		return fmt.Errorf("budget: source %q: OwnerDailyLimit is %d; want nil, 0 (disabled) or more", s.Name, *s.OwnerDailyLimit)
	}
	if s.ReportedDailyLimit != nil && *s.ReportedDailyLimit < 0 {
		return fmt.Errorf("budget: source %q: ReportedDailyLimit is %d; want nil or 0 or more", s.Name, *s.ReportedDailyLimit)
	}
	if s.Share < ShareNormal || s.Share > ShareUnlimited {
		return fmt.Errorf("budget: source %q: Share is %d; want ShareNormal, ShareGentle or ShareUnlimited", s.Name, int(s.Share))
	}
	if s.ReservePercent != nil && (*s.ReservePercent < 0 || *s.ReservePercent > 100) {
		return fmt.Errorf("budget: source %q: ReservePercent is %d; want nil (default 10) or 0 to 100", s.Name, *s.ReservePercent)
	}
	if s.Pace < 0 && s.Pace != NoPace {
		return fmt.Errorf("budget: source %q: Pace is %v; want 0 (default 3s), a positive duration or NoPace", s.Name, s.Pace)
	}
	return nil
}

func validName(name string) error {
	switch {
	case name == "":
		return errors.New("budget: source name is empty")
	case len(name) > maxName:
		return fmt.Errorf("budget: source name %q... is longer than %d bytes", name[:40], maxName)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("budget: source name %q has surrounding space", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("budget: source name %q has a control character", name)
	}
	return nil
}
