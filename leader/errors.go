package leader

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched by every *InputError: errors.Is(err, ErrInvalid)
// tells a configuration New cannot use from a failure of the store.
var ErrInvalid = errors.New("leader: invalid input")

// InputError reports a Config value New cannot use. Field is the
// setting's snake_case name as the daemon's configuration file spells it
// within its leader section (name, node_id, lease, renew_every); a
// boundary that spells it differently renames it.
type InputError struct {
	Field  string
	Reason string
}

// Error reads "leader: <field>: <reason>".
func (e *InputError) Error() string {
	if e.Field == "" {
		return "leader: " + e.Reason
	}
	return "leader: " + e.Field + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }

func invalidf(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
