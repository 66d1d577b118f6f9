package budget

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// ErrRunTimeSource: the source was added at run time (SetSource) and has no
// configured settings to go back to; RemoveSource removes it.
var ErrRunTimeSource = errors.New("budget: source was added at run time and has no configured settings")

// ResetSource drops every run-time setting of a configured source
// (SetSource's and ReportLimit's), on every node, so that it runs on its
// configured settings again. Unlike RemoveSource it is not an error when
// there is nothing to drop (changed is false then), and it works the same
// for a source a feed polls. A source that is not configured fails with
// ErrRunTimeSource when it exists as a run-time source, else with
// ErrUnknownSource. Counters stay.
func (b *Budget) ResetSource(ctx context.Context, name string) (changed bool, err error) {
	if err := ValidateSourceName(name); err != nil {
		return false, err
	}
	b.mu.Lock()
	_, configured := b.baseSources[name]
	b.mu.Unlock()
	err = b.change(ctx, func(o *overrides, eff *snapshot) (bool, error) {
		changed = false
		if !configured {
			if _, ok := eff.sources[name]; ok {
				return false, fmt.Errorf("%w: %q", ErrRunTimeSource, name)
			}
			return false, fmt.Errorf("%w %q", ErrUnknownSource, name)
		}
		if _, ok := o.Sources[name]; !ok {
			return false, nil
		}
		delete(o.Sources, name)
		changed = true
		return true, nil
	})
	return changed, err
}

// Overridden returns, sorted, the configured sources whose settings as last
// read (see Refresh) differ from their configuration because of a stored
// run-time setting: what an operator may not expect after editing the
// configuration file, and can undo with ResetSource.
func (b *Budget) Overridden() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	snap := b.snap.Load()
	var out []string
	for name, base := range b.baseSources {
		if r, ok := snap.sources[name]; ok && !sameSource(r.Source, base) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
