package health

import "strings"

// View selects names by their state. Filter accepts Healthy and Available;
// List accepts every View. The string values are the ones the daemon's API
// uses (?view=healthy).
type View string

const (
	// Healthy is the strict view, for what a person sees: no counted
	// failure since the last success.
	Healthy View = "healthy"
	// Available is the time-based view, for background work: the backoff
	// of the last counted failure is over.
	Available View = "available"
	// Unhealthy is the complement of Healthy (List only).
	Unhealthy View = "unhealthy"
	// Backoff is the complement of Available: in backoff now (List only).
	Backoff View = "backoff"
	// All is every known name (List only). The zero View means All in
	// ListParams.
	All View = "all"
)

// ParseView parses a view name as the API spells it, case-insensitively.
func ParseView(s string) (View, error) {
	v := View(strings.ToLower(strings.TrimSpace(s)))
	switch v {
	case Healthy, Available, Unhealthy, Backoff, All:
		return v, nil
	}
	return "", invalid("view", "unknown view %q; want healthy, available, unhealthy, backoff or all", clip(s))
}

// filterable reports whether Filter accepts v.
func (v View) filterable() bool { return v == Healthy || v == Available }

// clip shortens a value quoted in a reason.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
