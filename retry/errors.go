package retry

import (
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// ErrLeaseLost reports a lease operation with a token that no longer holds
// the item: the item has been claimed again by someone else, or this lease
// was already settled in another way (a Fail after a Succeed, or the
// scheduler counted its repeated expiry as a failure), or the token belongs
// to another item or lease. Nothing was changed.
var ErrLeaseLost = errors.New("retry: lease lost")

// ErrNotFound reports an id the scheduler does not hold. It is
// retrydriver.ErrNotFound, the value a Store returns, so errors.Is matches
// either name.
var ErrNotFound = retrydriver.ErrNotFound

// ErrInvalid is matched (with errors.Is) by every error that rejects a
// caller's input; such an error is an *InputError naming the field, and
// the call changed nothing.
var ErrInvalid = errors.New("retry: invalid input")

// InputError reports input the scheduler cannot take. Field is the
// snake_case name of the input as the daemon's JSON and the configuration
// file spell it ("id", "items[3].priority", "lease_seconds",
// "classes.no_peers.ladder[1]"); it is empty when the input as a whole is
// wrong. Reason says what is wrong with it. An InputError matches
// ErrInvalid.
type InputError struct {
	Field  string
	Reason string
}

// Error reads "retry: <field>: <reason>", or "retry: <reason>" without a
// field.
func (e *InputError) Error() string {
	if e.Field == "" {
		return "retry: " + e.Reason
	}
	return "retry: " + e.Field + ": " + e.Reason
}

// Is makes every InputError match ErrInvalid.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }

func invalid(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// inField returns err with its field placed under prefix ("items[3]" and
// "id" make "items[3].id"); other errors pass through.
func inField(prefix string, err error) error {
	var ie *InputError
	if !errors.As(err, &ie) {
		return err
	}
	f := prefix
	if ie.Field != "" {
		f += "." + ie.Field
	}
	return &InputError{Field: f, Reason: ie.Reason}
}
