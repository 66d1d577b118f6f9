package budget

import (
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/budget/budgetdriver"
)

// Sentinels for the conditions callers branch on. Refusals are returned as
// *ExhaustedError or *PacedError, which match ErrExhausted and ErrPaced with
// errors.Is.
var (
	// ErrExhausted: an allowance has no room left today.
	ErrExhausted = errors.New("budget: allowance exhausted")
	// ErrPaced: the source was asked too recently; try again later.
	ErrPaced = errors.New("budget: paced")
	// ErrPaused: the owner paused all background work (Budget.Pause), or
	// the source's (Budget.PauseSource).
	ErrPaused = errors.New("budget: background work is paused")
	// ErrDisabled: the allowance for this work is zero.
	ErrDisabled = errors.New("budget: allowance is zero")
	// ErrUnknownSource: no source of that name is configured.
	ErrUnknownSource = errors.New("budget: unknown source")
	// ErrGrantNotFound: no reservation has that id. The grant errors are
	// budgetdriver's, the values a Store returns, so errors.Is matches
	// either name.
	ErrGrantNotFound = budgetdriver.ErrGrantNotFound
	// ErrGrantClosed: the reservation was already settled or released with
	// a different figure.
	ErrGrantClosed = budgetdriver.ErrGrantClosed
	// ErrGrantExpired: the reservation's day is over; it stays charged in
	// full.
	ErrGrantExpired = budgetdriver.ErrGrantExpired
)

// Allowance names the allowance that refused an admission.
type Allowance string

const (
	// AllowanceSource is the source's own daily allowance.
	AllowanceSource Allowance = "source"
	// AllowanceTotal is the owner's cap over all sources.
	AllowanceTotal Allowance = "total"
	// AllowanceKind is a cluster-wide allowance of one kind of work
	// (validation, candidate, descriptor, bytes).
	AllowanceKind Allowance = "kind"
)

// ExhaustedError is a refusal because an allowance has no room today. It
// matches ErrExhausted.
type ExhaustedError struct {
	Allowance Allowance
	Source    string // the source asked for ("" for cluster-wide work without one)
	Kind      Kind
	// Limit is what this admission could use of the allowance: for gap
	// pages and searches, the allowance minus Reserved.
	Limit int64
	// Reserved is how many head polls the rest of the day keeps back from
	// gap pages and searches (0 for other kinds).
	Reserved int64
	// Used is the allowance's usage when the admission was refused.
	Used int64
	// Reported is true when the source itself said its limit is reached
	// (see Budget.MarkExhausted).
	Reported bool
	// ResetAt is when the allowance may admit again: the next UTC
	// midnight, when the counters start again, or the earlier end of a
	// source's own exhaustion (see Budget.MarkExhausted).
	ResetAt time.Time
}

func (e *ExhaustedError) Error() string {
	who := string(e.Kind)
	if e.Source != "" {
		who = fmt.Sprintf("%s on source %q", e.Kind, e.Source)
	}
	if e.Reported {
		return fmt.Sprintf("budget: %s refused: the source reported its limit reached; resets at %s",
			who, e.ResetAt.Format(time.RFC3339))
	}
	kept := ""
	if e.Reserved > 0 {
		kept = fmt.Sprintf(", %d more kept for today's head polls", e.Reserved)
	}
	return fmt.Sprintf("budget: %s refused: %s allowance exhausted (%d used of %d%s); resets at %s",
		who, e.Allowance, e.Used, e.Limit, kept, e.ResetAt.Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrExhausted) true.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }

// PacedError is a refusal because the source's last request (on any node)
// is less than its pace ago, or because a Wait could not get a slot before
// its context's deadline. It matches ErrPaced.
type PacedError struct {
	Source string
	// RetryAfter is how long until the source's next free slot.
	RetryAfter time.Duration
}

func (e *PacedError) Error() string {
	return fmt.Sprintf("budget: source %q paced: next slot in %v", e.Source, e.RetryAfter)
}

// Is makes errors.Is(err, ErrPaced) true.
func (e *PacedError) Is(target error) bool { return target == ErrPaced }

// ErrInvalid is matched (with errors.Is) by every error that rejects a
// caller's input. Such an error is an *InputError naming the input, and
// the call changed nothing.
var ErrInvalid = errors.New("budget: invalid input")

// InputError reports input the budget cannot take. Field is the snake_case
// name of the input as the daemon's JSON and its configuration file spell
// it ("source", "cost", "owner_daily_limit", "sources[2].share"); it is
// empty when the input as a whole is wrong. Reason says what is wrong with
// it and never repeats a value that may be long. An InputError matches
// ErrInvalid.
type InputError struct {
	Field  string
	Reason string
}

// Error reads "budget: <field>: <reason>", or "budget: <reason>" without a
// field.
func (e *InputError) Error() string {
	if e.Field == "" {
		return "budget: " + e.Reason
	}
	return "budget: " + e.Field + ": " + e.Reason
}

// Is makes every InputError match ErrInvalid.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }

func invalid(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// under places an InputError's field below prefix ("sources[2]" and "share"
// make "sources[2].share"); other errors pass unchanged.
func under(prefix string, err error) error {
	var ie *InputError
	if !errors.As(err, &ie) {
		return err
	}
	field := prefix
	if ie.Field != "" {
		field = prefix + "." + ie.Field
	}
	return &InputError{Field: field, Reason: ie.Reason}
}
