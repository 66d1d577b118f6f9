package server

import (
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/internal/inputerr"
)

// ErrInvalid is matched by every *InputError: errors.Is(err, ErrInvalid)
// tells a configuration New cannot use from a failure to start.
var ErrInvalid = errors.New("server: invalid input")

// InputError reports a setting of Config that New cannot use. Field is the
// setting's snake_case name as the daemon's config file spells it, dotted
// into the part it belongs to ("guard.open_for", "feeds[1].keep_items");
// a boundary that spells it differently (a command-line flag) renames it.
type InputError struct {
	Field  string
	Reason string
}

// Error reads "server: <field>: <reason>".
func (e *InputError) Error() string {
	if e.Field == "" {
		return "server: " + e.Reason
	}
	return "server: " + e.Field + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }

func invalid(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// under places the input error of a part's package at prefix: guard's
// open_for is the server's guard.open_for. Any other error is wrapped with
// the prefix as its context.
func under(prefix string, err error) error {
	field, reason, ok := InputField(err)
	if !ok {
		if prefix == "" {
			return err
		}
		return fmt.Errorf("server: %s: %w", prefix, err)
	}
	switch {
	case prefix == "":
	case field == "":
		field = prefix
	default:
		field = prefix + "." + field
	}
	return &InputError{Field: field, Reason: reason}
}

// InputField returns the field and reason of the first typed input error
// in err's chain, from the server or from any library package whose input
// the daemon passes on (each implements inputerr.Error). The server's own
// comes first in a chain: it carries a part's field under its place
// (guard.window, feeds[1].url). The command line uses it too.
func InputField(err error) (field, reason string, ok bool) {
	return inputerr.Find(err)
}
