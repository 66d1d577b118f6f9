package evidence

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by a Book's methods after Close.
var ErrClosed = errors.New("evidence: book is closed")

// ErrInvalid is matched (with errors.Is) by every error that rejects a
// caller's input. Such an error is an *InputError naming the input, and
// the call changed nothing.
var ErrInvalid = errors.New("evidence: invalid input")

// InputError reports input a Book cannot take. Field is the snake_case
// name of the input as the daemon's JSON and its configuration file spell
// it ("source", "subject", "fingerprint", "ttl"); it is empty when the
// input as a whole is wrong. Reason says what is wrong with it and never
// repeats the value. An InputError matches ErrInvalid.
type InputError struct {
	Field  string
	Reason string
}

// Error reads "evidence: <field>: <reason>", or "evidence: <reason>"
// without a field.
func (e *InputError) Error() string {
	if e.Field == "" {
		return "evidence: " + e.Reason
	}
	return "evidence: " + e.Field + ": " + e.Reason
}

// Is makes every InputError match ErrInvalid.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }

func invalid(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
