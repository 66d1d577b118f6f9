package health

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (with errors.Is) by every error that rejects a
// caller's input. Such an error is an *InputError naming the input, and
// the call changed nothing.
var ErrInvalid = errors.New("health: invalid input")

// InputError reports input a Tracker cannot take. Field is the snake_case
// name of the input as the daemon's JSON and its configuration file spell
// it ("name", "names[2]", "view", "limit", "schedule[1]"); it is empty when
// the input as a whole is wrong. Reason says what is wrong with it and
// never repeats a name, which may carry a credential. An InputError
// matches ErrInvalid.
type InputError struct {
	Field  string
	Reason string
}

// Error reads "health: <field>: <reason>", or "health: <reason>" without a
// field.
func (e *InputError) Error() string {
	if e.Field == "" {
		return "health: " + e.Reason
	}
	return "health: " + e.Field + ": " + e.Reason
}

// Is makes every InputError match ErrInvalid.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }

func invalid(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// renamed returns err with its InputError field replaced by field.
func renamed(field string, err error) error {
	var ie *InputError
	if errors.As(err, &ie) {
		return &InputError{Field: field, Reason: ie.Reason}
	}
	return err
}
