package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/budget/budgetdriver"
	"github.com/hostguard/hostguard/internal/storeclock"
)

// Budget admits background requests against daily allowances and paces
// them per source, with its counters in a shared Store. It is safe for
// concurrent use. Most callers want Wait (or Admit, which never blocks)
// before each request, and Settle for byte reservations.
//
// The configuration given to New is the base. SetSource, RemoveSource,
// SetLimits, Pause and ReportLimit store overrides in the store's settings
// record when the Store is a SettingsStore (store/sqlite and
// store/postgres are): the change is then cluster-wide and durable, it wins
// over the base of every node until removed, and every node's next
// admission sees it. Over any other Store the overrides live in this
// Budget's memory only.
type Budget struct {
	st    Store
	ss    settingsRW
	now   func() time.Time
	batch batcher

	// base is the configuration given to New (with defaults; Sources in
	// baseSources); AddBaseSource adds to it. Guarded by mu.
	base        Config
	baseSources map[string]Source
	cur         overrides // as last published

	mu   sync.Mutex // serialises publishing snapshots and base changes
	snap atomic.Pointer[snapshot]
}

// snapshot is one immutable configuration. Admission loads it once, so an
// admission never sees half of a change.
type snapshot struct {
	cfg     Config // with defaults; Sources is not kept current, see sources
	sources map[string]*resolved
	names   []string // sorted
	paused  bool
	// gen is the settings generation the snapshot was built from; loaded
	// is false until the stored settings were first read.
	gen    int64
	loaded bool
}

// New returns a Budget over st. It checks cfg as Config.Validate does. The
// overrides stored in st are read at the first admission (or Refresh).
func New(st Store, cfg Config) (*Budget, error) {
	if st == nil {
		return nil, errors.New("budget: nil Store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Now = storeclock.Or(cfg.Now, st)
	cfg = cfg.withDefaults()
	b := &Budget{st: st, now: cfg.Now, batch: batcher{st: st}}
	b.baseSources = make(map[string]Source, len(cfg.Sources))
	for _, s := range cfg.Sources {
		b.baseSources[s.Name] = s.normalized()
	}
	b.base = cfg
	b.base.Sources = nil
	snap := b.effective(overrides{}, 0)
	if ss, ok := st.(SettingsStore); ok {
		b.ss = ss
		snap.loaded = false
	} else {
		b.ss = &memSettings{}
	}
	b.snap.Store(snap)
	return b, nil
}

func build(cfg Config, srcs map[string]Source, paused bool) *snapshot {
	s := &snapshot{cfg: cfg, sources: make(map[string]*resolved, len(srcs)), paused: paused}
	for name, src := range srcs {
		r := resolve(src, cfg.HeadPollEvery)
		s.sources[name] = &r
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	s.cfg.Sources = nil
	return s
}

// AddBaseSource adds s to the base configuration, as if it had been in
// Config.Sources, unless the base already has a source of that name; it
// reports whether it added s. It changes this Budget only, not the store:
// it is for sources that the program's own configuration implies (the
// daemon adds one for each configured feed). A stored override of the
// same name still wins.
func (b *Budget) AddBaseSource(s Source) (bool, error) {
	return b.putBaseSource(s, func(_, _ Source, ok bool) bool { return !ok })
}

// SetSource adds a source, or replaces the configuration of the source of
// the same name (the base's too, until RemoveSource), on every node that
// shares the store. Usage already counted today stays counted.
func (b *Budget) SetSource(ctx context.Context, s Source) error {
	if err := s.Validate(); err != nil {
		return err
	}
	s = s.normalized()
	return b.change(ctx, func(o *overrides, eff *snapshot) (bool, error) {
		if o.Sources == nil {
			o.Sources = map[string]*sourceOverride{}
		}
		prev := o.Sources[s.Name]
		src := s
		o.Sources[s.Name] = &sourceOverride{Source: &src}
		return prev == nil || prev.Reported != nil || prev.Source == nil || !sameSource(*prev.Source, s), nil
	})
}

func sameSource(a, b Source) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// RemoveSource removes the run-time override of a source (SetSource's and
// ReportLimit's), on every node. A source that exists only as an override
// is gone: admissions for it fail with ErrUnknownSource. A source of the
// base configuration goes back to its base settings; one that has no
// override fails with ErrConfiguredSource (remove it from the
// configuration instead). Counters stay in the store (and in the total).
func (b *Budget) RemoveSource(ctx context.Context, name string) error {
	if err := ValidateSourceName(name); err != nil {
		return err
	}
	return b.change(ctx, func(o *overrides, eff *snapshot) (bool, error) {
		if _, ok := eff.sources[name]; !ok {
			return false, fmt.Errorf("%w %q", ErrUnknownSource, name)
		}
		if _, ok := o.Sources[name]; !ok {
			return false, fmt.Errorf("%w: %q", ErrConfiguredSource, name)
		}
		delete(o.Sources, name)
		b.mu.Lock()
		_, configured := b.baseSources[name]
		b.mu.Unlock()
		if !configured {
			// The source is gone: a later source of that name starts
			// unpaused.
			delete(o.PausedSources, name)
		}
		return true, nil
	})
}

// Sources returns the configured sources, sorted by name, as last read
// (see Refresh).
func (b *Budget) Sources() []Source {
	s := b.snap.Load()
	out := make([]Source, 0, len(s.names))
	for _, n := range s.names {
		out = append(out, s.sources[n].Source)
	}
	return out
}

// SetLimits replaces the cluster-wide allowances, on every node.
func (b *Budget) SetLimits(ctx context.Context, l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	return b.change(ctx, func(o *overrides, eff *snapshot) (bool, error) {
		same := o.Limits != nil && sameLimits(*o.Limits, l)
		o.Limits = &l
		return !same, nil
	})
}

func sameLimits(a, b Limits) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Limits returns the cluster-wide allowances as last read (nil fields are
// defaults).
func (b *Budget) Limits() Limits { return b.snap.Load().cfg.Limits }

// Pause pauses (true) or resumes (false) all background work on every
// node that shares the store: while paused every background admission
// fails with ErrPaused. Foreground requests are still admitted. The
// setting overrides Config.Paused, also after a restart.
func (b *Budget) Pause(ctx context.Context, paused bool) error {
	return b.change(ctx, func(o *overrides, eff *snapshot) (bool, error) {
		same := o.Paused != nil && *o.Paused == paused
		o.Paused = &paused
		return !same, nil
	})
}

// Paused reports whether background work is paused, as last read.
func (b *Budget) Paused() bool { return b.snap.Load().paused }

// PauseSource pauses (true) or resumes (false) the background work of one
// source on every node that shares the store: while it is paused every
// background admission naming the source fails with ErrPaused, and the
// other sources go on. Foreground requests are still admitted. The pause
// stays after a restart, and when the source's settings are replaced
// (SetSource) or reset (ResetSource); it goes with the source when
// RemoveSource removes a source added at run time. An unknown source fails
// with ErrUnknownSource.
func (b *Budget) PauseSource(ctx context.Context, name string, paused bool) error {
	if err := ValidateSourceName(name); err != nil {
		return err
	}
	return b.change(ctx, func(o *overrides, eff *snapshot) (bool, error) {
		if _, ok := eff.sources[name]; !ok {
			return false, fmt.Errorf("%w %q", ErrUnknownSource, name)
		}
		if o.PausedSources[name] == paused {
			return false, nil
		}
		if !paused {
			delete(o.PausedSources, name)
			return true, nil
		}
		if o.PausedSources == nil {
			o.PausedSources = map[string]bool{}
		}
		o.PausedSources[name] = true
		return true, nil
	})
}

// SourcePaused reports whether source is paused on its own (PauseSource),
// as last read; false for an unknown source.
func (b *Budget) SourcePaused(name string) bool {
	r, ok := b.snap.Load().sources[name]
	return ok && r.paused
}

// ReportLimit records the daily limit that source reports about itself (for
// example from a Newznab caps answer), for every node: the last report
// wins. It matters only when the owner set no limit. n = 0 clears the
// reported figure, since sources that report zero usually mean "unknown" or
// "unlimited" rather than "none". A report that changes nothing writes
// nothing.
func (b *Budget) ReportLimit(ctx context.Context, source string, n int64) error {
	if err := checkName("source", source); err != nil {
		return err
	}
	if err := checkAmount("reported_daily_limit", n, "0 (not known)"); err != nil {
		return err
	}
	return b.change(ctx, func(o *overrides, eff *snapshot) (bool, error) {
		r, ok := eff.sources[source]
		if !ok {
			return false, fmt.Errorf("%w %q", ErrUnknownSource, source)
		}
		if cur := r.ReportedDailyLimit; (cur == nil && n == 0) || (cur != nil && *cur == n) {
			return false, nil
		}
		if o.Sources == nil {
			o.Sources = map[string]*sourceOverride{}
		}
		ov := o.Sources[source]
		if ov == nil {
			ov = &sourceOverride{}
			o.Sources[source] = ov
		}
		ov.Reported = Int(n)
		return true, nil
	})
}

// MarkExhausted records, for every node, that source said its API limit is
// reached: its head polls, gap pages and searches are refused until until,
// or, when until is zero or later, until the end of the current UTC day
// (by Config.Now), when the day's counters start again. An indexer that
// refuses with a time to come back ("retry in 10 minutes") is marked until
// then; one that only says "limit reached" is marked with a zero until. A
// later mark that ends earlier than an earlier one does not shorten it.
//
// until must lie after now (an *InputError for Field "until" otherwise,
// and nothing changes): a mark that would already be over is a mistake.
func (b *Budget) MarkExhausted(ctx context.Context, source string, until time.Time) error {
	if err := checkName("source", source); err != nil {
		return err
	}
	now := b.clock()
	end := nextMidnight(now)
	switch {
	case until.IsZero() || until.After(end):
		until = end
	case !until.After(now):
		return invalid("until", "is %s, not after now (%s); zero means the end of the day",
			until.UTC().Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	}
	if _, ok := b.snap.Load().sources[source]; !ok {
		if _, err := b.refresh(ctx); err != nil {
			return err
		}
		if _, ok := b.snap.Load().sources[source]; !ok {
			return fmt.Errorf("%w %q", ErrUnknownSource, source)
		}
	}
	err := b.st.BudgetClose(ctx, budgetdriver.CloseParams{Day: utcDay(now), Scope: source, Kind: budgetdriver.Kind(CounterSource), Until: until.UTC().Truncate(time.Microsecond)})
	if err != nil {
		return err
	}
	return nil
}

// PollInterval returns how often source's head should be polled: the
// configured interval (30 min by default), stretched when head polls at
// that interval would take more than half the source's allowance. It is 0
// when the allowance is 0 (no polling).
func (b *Budget) PollInterval(source string) (time.Duration, error) {
	r, ok := b.snap.Load().sources[source]
	if !ok {
		return 0, fmt.Errorf("%w %q", ErrUnknownSource, source)
	}
	return r.every, nil
}

// Prune deletes usage and reservations older than Config.KeepDays days.
// A periodic loop (on the leader) should call it, say, daily.
func (b *Budget) Prune(ctx context.Context) (int64, error) {
	keep := b.snap.Load().cfg.KeepDays
	before := utcDay(b.now()).AddDate(0, 0, -(keep - 1))
	n, err := b.st.BudgetPrune(ctx, before)
	if err != nil {
		return n, err
	}
	return n, nil
}

// clock returns now in the form the store keeps: UTC, microseconds.
func (b *Budget) clock() time.Time { return b.now().UTC().Truncate(time.Microsecond) }
