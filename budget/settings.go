package budget

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/hostguard/hostguard/budget/budgetdriver"
)

// Settings at run time. The configuration given to New (Config) is the
// base. What SetSource, RemoveSource, SetLimits, Pause and ReportLimit
// change is an override kept in the store's settings record, shared by
// every node on the store and kept across restarts; an override wins over
// the base until it is removed. The record has a generation that every
// change bumps, and every admission transaction compares the generation its
// admission was planned under with the stored one: a node that planned
// under an older generation reloads the record and plans again, so the
// first admission that starts after a change commits sees it, on every
// node.

// SettingsStore is a Store that also keeps the run-time settings record;
// see package budgetdriver. The stores hostguard.Open returns are
// SettingsStores. Over a Store that is not, a Budget keeps its overrides
// in memory, for this node only.
type SettingsStore = budgetdriver.SettingsStore

// ErrConfiguredSource: the source comes from the configuration given at
// start (Config.Sources) and has no run-time override to remove.
var ErrConfiguredSource = errors.New("budget: source is configured at start and has no run-time override")

// overrides is the settings record: every field nil (or absent) means
// "the base applies".
type overrides struct {
	Paused  *bool                      `json:"paused,omitempty"`
	Limits  *Limits                    `json:"limits,omitempty"`
	Sources map[string]*sourceOverride `json:"sources,omitempty"`
	// PausedSources names the sources paused one by one (PauseSource).
	// It lives beside Sources, not in a source's override, because a
	// pause is the operator's, not part of a source's settings: replacing
	// or resetting the settings keeps it.
	PausedSources map[string]bool `json:"paused_sources,omitempty"`
}

// sourceOverride is one source's run-time settings.
type sourceOverride struct {
	// Source is the definition given by SetSource; nil: the base's.
	Source *Source `json:"source,omitempty"`
	// Reported is the limit last given to ReportLimit (0: cleared); nil:
	// the definition's ReportedDailyLimit.
	Reported *int64 `json:"reported,omitempty"`
}

func decodeOverrides(doc []byte) (overrides, error) {
	var o overrides
	if len(bytes.TrimSpace(doc)) == 0 {
		return o, nil
	}
	if err := json.Unmarshal(doc, &o); err != nil {
		return overrides{}, fmt.Errorf("budget: stored settings are not readable: %w", err)
	}
	return o, nil
}

func (o overrides) clone() overrides {
	doc, _ := json.Marshal(o)
	c, _ := decodeOverrides(doc)
	return c
}

// memSettings keeps the settings record in memory, for a Store that is not
// a SettingsStore.
type memSettings struct {
	mu  sync.Mutex
	cur budgetdriver.Settings
}

func (m *memSettings) BudgetSettings(context.Context) (budgetdriver.Settings, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur, nil
}

func (m *memSettings) BudgetPutSettings(_ context.Context, p budgetdriver.PutSettingsParams) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur.Generation != p.Prev {
		return false, nil
	}
	m.cur = budgetdriver.Settings{Generation: p.Prev + 1, Doc: append([]byte(nil), p.Doc...)}
	return true, nil
}

type settingsRW interface {
	BudgetSettings(ctx context.Context) (budgetdriver.Settings, error)
	BudgetPutSettings(ctx context.Context, p budgetdriver.PutSettingsParams) (bool, error)
}

// effective merges the base with the overrides. b.mu must be held.
func (b *Budget) effective(o overrides, gen int64) *snapshot {
	cfg := b.base
	if o.Limits != nil && o.Limits.Validate() == nil {
		cfg.Limits = *o.Limits
	}
	paused := b.base.Paused
	if o.Paused != nil {
		paused = *o.Paused
	}
	srcs := make(map[string]Source, len(b.baseSources)+len(o.Sources))
	for n, s := range b.baseSources {
		srcs[n] = s
	}
	for n, ov := range o.Sources {
		if ov == nil {
			continue
		}
		if ov.Source != nil && ov.Source.Name == n && ov.Source.Validate() == nil {
			srcs[n] = ov.Source.normalized()
		}
		if s, ok := srcs[n]; ok && ov.Reported != nil && *ov.Reported >= 0 {
			s.ReportedDailyLimit = nil
			if *ov.Reported > 0 {
				s.ReportedDailyLimit = Int(*ov.Reported)
			}
			srcs[n] = s
		}
	}
	snap := build(cfg, srcs, paused)
	for n, p := range o.PausedSources {
		if r, ok := snap.sources[n]; ok && p {
			r.paused = true
		}
	}
	snap.gen, snap.loaded = gen, true
	return snap
}

// Refresh reads the settings record and, when another node (or another
// Budget on this store) changed it, makes the change this node's current
// configuration. Admissions and Report do this themselves; Sources,
// Limits, Paused and PollInterval show the configuration as last read, so
// a caller that needs them current calls Refresh first.
func (b *Budget) Refresh(ctx context.Context) error {
	_, err := b.refresh(ctx)
	return err
}

// refresh reloads the record if its generation changed, and reports
// whether the current snapshot changed.
func (b *Budget) refresh(ctx context.Context) (bool, error) {
	rec, err := b.ss.BudgetSettings(ctx)
	if err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur := b.snap.Load(); cur.loaded && cur.gen >= rec.Generation {
		return false, nil
	}
	o, err := decodeOverrides(rec.Doc)
	if err != nil {
		return false, err
	}
	b.cur = o
	b.snap.Store(b.effective(o, rec.Generation))
	return true, nil
}

// change applies fn to the stored overrides, with compare-and-set on the
// generation: a concurrent change by another node makes it read and apply
// again, so changes to different fields never undo each other, and of two
// changes to one field the later wins. fn sees the current effective
// configuration too, and reports whether it changed anything; nothing is
// written (and the generation stays) when it did not.
func (b *Budget) change(ctx context.Context, fn func(o *overrides, eff *snapshot) (bool, error)) error {
	for attempt := 0; ; attempt++ {
		rec, err := b.ss.BudgetSettings(ctx)
		if err != nil {
			return err
		}
		o, err := decodeOverrides(rec.Doc)
		if err != nil {
			return err
		}
		next := o.clone()
		b.mu.Lock()
		eff := b.effective(o, rec.Generation)
		b.mu.Unlock()
		changed, err := fn(&next, eff)
		if err != nil {
			return err
		}
		if !changed {
			b.publish(o, rec.Generation)
			return nil
		}
		doc, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("budget: encode settings: %w", err)
		}
		ok, err := b.ss.BudgetPutSettings(ctx, budgetdriver.PutSettingsParams{Prev: rec.Generation, Doc: doc, Now: b.clock()})
		if err != nil {
			return err
		}
		if ok {
			b.publish(next, rec.Generation+1)
			return nil
		}
		if attempt == 20 {
			return errors.New("budget: store settings: the settings keep changing under this change")
		}
	}
}

// publish makes o (at generation gen) current unless a newer one is.
func (b *Budget) publish(o overrides, gen int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur := b.snap.Load(); cur.loaded && cur.gen >= gen {
		return
	}
	b.cur = o
	b.snap.Store(b.effective(o, gen))
}
