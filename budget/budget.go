package budget

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Budget admits background requests against daily allowances and paces
// them per source, with its counters in a shared Store. It is safe for
// concurrent use. Most callers want Wait (or Admit, which never blocks)
// before each request, and Settle for byte reservations.
//
// The configuration lives in memory and may change while running
// (SetSource, RemoveSource, SetLimits, Pause, ReportLimit); the next
// admission sees the change. Nodes sharing a store should share the same
// configuration: each node checks the shared counters against its own.
type Budget struct {
	st    Store
	now   func() time.Time
	batch batcher

	mu   sync.Mutex // serialises configuration writers
	snap atomic.Pointer[snapshot]
}

// snapshot is one immutable configuration. Admission loads it once, so an
// admission never sees half of a change.
type snapshot struct {
	cfg     Config // with defaults; Sources is not kept current, see sources
	sources map[string]*resolved
	names   []string // sorted
	paused  bool
}

// New returns a Budget over st. It checks cfg and names the bad field.
func New(st Store, cfg Config) (*Budget, error) {
	if st == nil {
		return nil, errors.New("budget: nil Store")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b := &Budget{st: st, now: cfg.Now, batch: batcher{st: st}}
	srcs := make(map[string]Source, len(cfg.Sources))
	for _, s := range cfg.Sources {
		srcs[s.Name] = s
	}
	b.snap.Store(build(cfg, srcs, cfg.Paused))
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

// update applies fn to a copy of the current configuration and publishes
// the result, unless fn fails.
func (b *Budget) update(fn func(cfg *Config, srcs map[string]Source, paused *bool) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.snap.Load()
	cfg := cur.cfg
	paused := cur.paused
	srcs := make(map[string]Source, len(cur.sources))
	for name, r := range cur.sources {
		srcs[name] = r.Source
	}
	if err := fn(&cfg, srcs, &paused); err != nil {
		return err
	}
	b.snap.Store(build(cfg, srcs, paused))
	return nil
}

// SetSource adds a source, or replaces the configuration of the source of
// the same name. Usage already counted today stays counted.
func (b *Budget) SetSource(s Source) error {
	if err := s.validate(); err != nil {
		return err
	}
	return b.update(func(_ *Config, srcs map[string]Source, _ *bool) error {
		srcs[s.Name] = s
		return nil
	})
}

// RemoveSource forgets a source: admissions for it fail with
// ErrUnknownSource. Its counters stay in the store (and in the total).
func (b *Budget) RemoveSource(name string) error {
	return b.update(func(_ *Config, srcs map[string]Source, _ *bool) error {
		if _, ok := srcs[name]; !ok {
			return fmt.Errorf("%w %q", ErrUnknownSource, name)
		}
		delete(srcs, name)
		return nil
	})
}

// Sources returns the configured sources, sorted by name.
func (b *Budget) Sources() []Source {
	s := b.snap.Load()
	out := make([]Source, 0, len(s.names))
	for _, n := range s.names {
		out = append(out, s.sources[n].Source)
	}
	return out
}

// SetLimits replaces the cluster-wide allowances.
func (b *Budget) SetLimits(l Limits) error {
	if err := l.validate(); err != nil {
		return err
	}
	return b.update(func(cfg *Config, _ map[string]Source, _ *bool) error {
		cfg.Limits = l
		return nil
	})
}

// Limits returns the cluster-wide allowances as configured (nil fields are
// defaults).
func (b *Budget) Limits() Limits { return b.snap.Load().cfg.Limits }

// Pause pauses (true) or resumes (false) all background work on this node:
// while paused every background admission fails with ErrPaused. Foreground
// requests are still admitted.
func (b *Budget) Pause(paused bool) {
	_ = b.update(func(_ *Config, _ map[string]Source, p *bool) error {
		*p = paused
		return nil
	})
}

// Paused reports whether background work is paused.
func (b *Budget) Paused() bool { return b.snap.Load().paused }

// ReportLimit records the daily limit that source reports about itself (for
// example from a Newznab caps answer). It matters only when the owner set
// no limit. n = 0 clears the reported figure, since sources that report
// zero usually mean "unknown" or "unlimited" rather than "none".
func (b *Budget) ReportLimit(source string, n int64) error {
	if n < 0 {
		return fmt.Errorf("budget: source %q reported a negative daily limit %d", source, n)
	}
	return b.update(func(_ *Config, srcs map[string]Source, _ *bool) error {
		s, ok := srcs[source]
		if !ok {
			return fmt.Errorf("%w %q", ErrUnknownSource, source)
		}
		s.ReportedDailyLimit = nil
		if n > 0 {
			s.ReportedDailyLimit = Int(n)
		}
		srcs[source] = s
		return nil
	})
}

// MarkExhausted records, for every node, that source said its API limit is
// reached: its head polls, gap pages and searches are refused until the end
// of the UTC day of now (zero now means the Budget's clock).
func (b *Budget) MarkExhausted(ctx context.Context, source string, now time.Time) error {
	if _, ok := b.snap.Load().sources[source]; !ok {
		return fmt.Errorf("%w %q", ErrUnknownSource, source)
	}
	if now.IsZero() {
		now = b.now()
	}
	err := b.st.BudgetClose(ctx, StoreCloseParams{Day: utcDay(now), Scope: source, Kind: CounterSource})
	if err != nil {
		return fmt.Errorf("budget: mark source %q exhausted: %w", source, err)
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
		return n, fmt.Errorf("budget: prune: %w", err)
	}
	return n, nil
}

// clock returns now in the form the store keeps: UTC, microseconds.
func (b *Budget) clock() time.Time { return b.now().UTC().Truncate(time.Microsecond) }
