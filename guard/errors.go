package guard

import (
	"errors"
	"fmt"
	"time"
)

// ErrOpen is matched by every *OpenError: errors.Is(err, ErrOpen) tells a
// fast-fail from a real network error.
var ErrOpen = errors.New("guard: endpoint is not answering; request skipped")

// OpenError is what Acquire returns instead of a ticket while an endpoint
// is open, or half-open with its trial already out. The request was not
// sent.
//
// Its message names the endpoint (an origin: no userinfo, path or query)
// and nothing else, so it can be shown to a user and logged as is. It
// deliberately reads neither like an HTTP status nor like a timeout, so
// that code which sorts errors by their text does not mistake a skipped
// request for an answer or for a slow host.
//
// Callers refused within the same millisecond share one *OpenError, which
// is what lets a refusal cost no allocation: treat it as read-only.
type OpenError struct {
	Endpoint string // the endpoint key, as Key returns it
	// RetryAfter is the time until the open period ends, rounded up to a
	// whole millisecond, so a caller who waits for it is never early; 0
	// while half-open with a trial (or probe) out.
	RetryAfter time.Duration
}

func (e *OpenError) Error() string {
	return "guard: " + e.Endpoint + " did not answer recently; request skipped without contacting it"
}

// Is makes errors.Is(err, ErrOpen) hold.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// ErrGaveUp is matched by every *GaveUpError.
var ErrGaveUp = errors.New("guard: caller gave up waiting for the endpoint's trial")

// GaveUpError is what AcquireContext returns when its context is done
// while it waits for an endpoint's half-open trial (Config.TrialWait). The
// request was not sent. errors.Is matches ErrGaveUp and, through Unwrap,
// the context's cause (context.Canceled or context.DeadlineExceeded
// unless the context was given another).
type GaveUpError struct {
	Endpoint string // the endpoint key, as Key returns it
	Cause    error  // context.Cause of the caller's context
}

func (e *GaveUpError) Error() string {
	return "guard: " + e.Endpoint + ": gave up waiting for its trial: " + fmt.Sprint(e.Cause)
}

// Is makes errors.Is(err, ErrGaveUp) hold.
func (e *GaveUpError) Is(target error) bool { return target == ErrGaveUp }

// Unwrap returns the context's cause.
func (e *GaveUpError) Unwrap() error { return e.Cause }

// ErrInvalid is matched by every *InputError: errors.Is(err, ErrInvalid)
// tells bad configuration or input from anything else.
var ErrInvalid = errors.New("guard: invalid input")

// InputError reports a configuration value or input the guard cannot use.
// Field is the snake_case name of the setting as the daemon's JSON and
// configuration file spell it (for example open_for); a boundary that
// spells it differently renames it.
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return "guard: " + e.Reason
	}
	return "guard: " + e.Field + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }

func invalidf(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
