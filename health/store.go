package health

import (
	"context"
	"strconv"
	"time"
)

// Store is the durable part of a Tracker. store/sqlite and store/postgres
// implement it; hostguard.Open returns a store that does. Method names carry
// the Health prefix so that one engine type can serve every capability.
//
// Implementations must be safe for concurrent use, and HealthTouch must be
// atomic per name even when several processes (nodes) share the database:
// no increment may be lost, and the backoff a failure sets must follow from
// the consecutive-failure count that the same write produced.
//
// Implementations take every time from their parameters, never from the
// database clock, so that fake clocks work.
type Store interface {
	// HealthTouch records one outcome for p.Name and returns the record as
	// it is after the write. An unknown name is created.
	HealthTouch(ctx context.Context, p StoreTouchParams) (Record, error)
	// HealthGet returns the record of name; found is false for an unknown
	// name.
	HealthGet(ctx context.Context, name string) (rec Record, found bool, err error)
	// HealthBlocked returns those of p.Names that p.View excludes at p.Now,
	// in any order, each at most once, in ONE query whatever the number of
	// names. Unknown names are never excluded.
	HealthBlocked(ctx context.Context, p StoreBlockedParams) ([]string, error)
	// HealthList returns up to p.Limit records that p.View includes at p.Now,
	// ordered by name (byte order), starting after p.After.
	HealthList(ctx context.Context, p StoreListParams) ([]Record, error)
	// HealthCounts counts the records by view at now.
	HealthCounts(ctx context.Context, now time.Time) (Counts, error)
	// HealthDelete forgets name; deleted is false when it was unknown.
	HealthDelete(ctx context.Context, name string) (deleted bool, err error)
}

// Outcome is what a touch reports.
type Outcome int

const (
	// Success clears the failure streak and any backoff.
	Success Outcome = iota + 1
	// Failure is a counted failure: the streak grows by one and the backoff
	// is set from the schedule.
	Failure
	// IgnoredFailure is a failure that outage protection did not count: it
	// updates the last failure time and the failure totals only.
	IgnoredFailure
)

// String returns "success", "failure" or "ignored_failure".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case IgnoredFailure:
		return "ignored_failure"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// StoreTouchParams is the input of Store.HealthTouch.
type StoreTouchParams struct {
	// Name is the normalised name (see NormalizeName): the record's key.
	Name string
	// Display is the form to show when the record is created; an existing
	// record keeps the display form it was first seen with.
	Display string
	// Outcome says what happened.
	Outcome Outcome
	// Now is the time of the outcome, already truncated to microseconds.
	Now time.Time
	// Schedule is the backoff ladder (at least one step). A counted failure
	// that makes the streak n long sets BackoffUntil to
	// Now + Schedule[min(n, len(Schedule))-1]. Only Failure reads it.
	Schedule []time.Duration
}

// StoreBlockedParams is the input of Store.HealthBlocked.
type StoreBlockedParams struct {
	// Names are normalised, distinct names.
	Names []string
	// View is Healthy or Available.
	View View
	// Now decides the Available view.
	Now time.Time
}

// StoreListParams is the input of Store.HealthList.
type StoreListParams struct {
	// View selects the records; All selects every one.
	View View
	// Limit is the most records to return (positive).
	Limit int
	// After, when not empty, skips every name up to and including it
	// (byte order), for paging.
	After string
	// Now decides the time-based views.
	Now time.Time
}

// Record is the durable state of one name, as a Store keeps it. A zero time
// means "never" (or "no backoff" for BackoffUntil).
type Record struct {
	// Name is the normalised name, the key.
	Name string `json:"name"`
	// Display is the name as first seen (trimmed, original case).
	Display string `json:"display"`
	// ConsecutiveFails counts counted failures since the last success.
	ConsecutiveFails int `json:"consecutive_fails"`
	// BackoffUntil is when the backoff of the last counted failure ends;
	// zero after a success.
	BackoffUntil time.Time `json:"backoff_until,omitzero"`
	// LastSuccess and LastFailure are the latest outcome times reported.
	// They never move back: a report older than the stored time (from a
	// node whose clock lags) leaves it. LastFailure includes failures that
	// outage protection ignored.
	LastSuccess time.Time `json:"last_success,omitzero"`
	LastFailure time.Time `json:"last_failure,omitzero"`
	// Successes and Failures are lifetime totals. Failures includes the
	// IgnoredFailures.
	Successes int64 `json:"successes"`
	Failures  int64 `json:"failures"`
	// IgnoredFailures counts failures that outage protection did not count
	// towards the streak.
	IgnoredFailures int64 `json:"ignored_failures"`
}

// Counts is how many known names each view holds at one instant. Unknown
// names are healthy and available but are not counted.
type Counts struct {
	// Known is every name with a record.
	Known int `json:"known"`
	// Unhealthy have at least one counted failure since their last success.
	Unhealthy int `json:"unhealthy"`
	// Backoff are in backoff now (a subset of Unhealthy).
	Backoff int `json:"backoff"`
}
