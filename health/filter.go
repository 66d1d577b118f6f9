package health

import (
	"context"
	"fmt"
)

// Filter returns the names that pass view (Healthy or Available), in their
// original order and spelling, and how many it removed; duplicates are kept
// or removed together. It costs one store query whatever the number of names
// (none for an empty list). Unknown names pass. A bad name or view is an
// error naming it, and nothing is filtered.
//
// Filter does not log: the caller knows what the names were for and logs
// the removed count if it is worth a line.
func (t *Tracker) Filter(ctx context.Context, names []string, view View) (kept []string, removed int, err error) {
	if !view.filterable() {
		return nil, 0, invalid("view", "Filter needs view %q or %q, not %q", Healthy, Available, clip(string(view)))
	}
	if len(names) == 0 {
		return []string{}, 0, nil
	}
	keys := make([]string, len(names))
	distinct := make([]string, 0, len(names))
	seen := make(map[string]struct{}, len(names))
	for i, n := range names {
		_, k, err := normalize(n)
		if err != nil {
			return nil, 0, renamed(fmt.Sprintf("names[%d]", i), err)
		}
		keys[i] = k
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			distinct = append(distinct, k)
		}
	}
	blocked, err := t.store.HealthBlocked(ctx, StoreBlockedParams{Names: distinct, View: view, Now: dbTime(t.cfg.Now())})
	if err != nil {
		return nil, 0, err
	}
	if len(blocked) == 0 {
		return append([]string(nil), names...), 0, nil
	}
	clear(seen)
	for _, k := range blocked {
		seen[k] = struct{}{}
	}
	kept = make([]string, 0, len(names)-len(blocked))
	for i, n := range names {
		if _, out := seen[keys[i]]; out {
			removed++
			continue
		}
		kept = append(kept, n)
	}
	return kept, removed, nil
}
