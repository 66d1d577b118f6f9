package health

import (
	"context"

	"github.com/hostguard/hostguard/internal/inputtext"
)

// DefaultListLimit and MaxListLimit bound ListParams.Limit.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ListParams selects records for List.
type ListParams struct {
	// View selects which records: Healthy, Available, Unhealthy, Backoff or
	// All. The zero value means All.
	View View
	// Limit is the most records returned, 1 to MaxListLimit (1000). Zero
	// means DefaultListLimit (100).
	Limit int
	// After continues a listing: only names after it (in byte order of the
	// normalised name) are returned. Pass the Name of the last record of the
	// previous page. Empty (the zero value) starts at the beginning. At
	// most MaxNameLen bytes of clean text (no NUL, control character or
	// invalid UTF-8).
	After string
}

// List returns the known names that p.View includes now, ordered by
// normalised name, for inspection (a status page, the daemon's
// GET /v1/hosts). Unknown names are never listed. A bad parameter is an
// error naming the field.
func (t *Tracker) List(ctx context.Context, p ListParams) ([]Status, error) {
	if p.View == "" {
		p.View = All
	}
	switch p.View {
	case Healthy, Available, Unhealthy, Backoff, All:
	default:
		return nil, invalid("view", "%q is not one of healthy, available, unhealthy, backoff, all", clip(string(p.View)))
	}
	switch {
	case p.Limit == 0:
		p.Limit = DefaultListLimit
	case p.Limit < 0 || p.Limit > MaxListLimit:
		return nil, invalid("limit", "%d is out of range 1..%d (0 means %d)", p.Limit, MaxListLimit, DefaultListLimit)
	}
	if len(p.After) > MaxNameLen {
		return nil, invalid("after", "is %d bytes long, over the limit of %d", len(p.After), MaxNameLen)
	}
	if err := inputtext.Check(p.After); err != nil {
		return nil, invalid("after", "%v", err)
	}
	now := t.cfg.Now()
	recs, err := t.store.HealthList(ctx, StoreListParams{View: p.View, Limit: p.Limit, After: p.After, Now: dbTime(now)})
	if err != nil {
		return nil, err
	}
	out := make([]Status, len(recs))
	for i, r := range recs {
		out[i] = t.status(r, true, now)
	}
	return out, nil
}

// Counts returns how many known names are unhealthy and in backoff now, for
// a status page or metrics.
func (t *Tracker) Counts(ctx context.Context) (Counts, error) {
	return t.store.HealthCounts(ctx, dbTime(t.cfg.Now()))
}
