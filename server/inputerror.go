package server

import (
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/feed/newznab"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/transport"
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
// the daemon passes on. The server's own comes first: it carries a part's
// field under its place (guard.window, feeds[1].url). The command line uses
// it too, so that the list of packages is written once.
func InputField(err error) (field, reason string, ok bool) {
	if e, ok := errors.AsType[*InputError](err); ok {
		return e.Field, e.Reason, true
	}
	if e, ok := errors.AsType[*guard.InputError](err); ok {
		return e.Field, e.Reason, true
	}
	if e, ok := errors.AsType[*transport.InputError](err); ok {
		return e.Field, e.Reason, true
	}
	if e, ok := errors.AsType[*budget.InputError](err); ok {
		return e.Field, e.Reason, true
	}
	if e, ok := errors.AsType[*evidence.InputError](err); ok {
		return e.Field, e.Reason, true
	}
	if e, ok := errors.AsType[*retry.InputError](err); ok {
		return e.Field, e.Reason, true
	}
	if e, ok := errors.AsType[*leader.InputError](err); ok {
		return e.Field, e.Reason, true
	}
	if e, ok := errors.AsType[*feed.InputError](err); ok {
		return e.Field, e.Reason, true
	}
	if e, ok := errors.AsType[*newznab.InputError](err); ok {
		return e.Field, e.Reason, true
	}
	return "", "", false
}
