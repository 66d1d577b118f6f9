// Package inputerr is the one seam between the daemon and the typed input
// errors of every library package. Each package's *InputError keeps its own
// type (so that errors.As on guard.InputError keeps working for callers),
// and all of them implement Error, so the daemon finds any of them with one
// call instead of a list of packages that must be kept in step by hand.
package inputerr

import "errors"

// Error is implemented by the *InputError of every library package and of
// the server: bad input, naming the snake_case field it was given under
// ("" when none) and why it was refused.
type Error interface {
	error
	InputField() (field, reason string)
}

// Find returns the field and reason of the first input error in err's
// chain.
func Find(err error) (field, reason string, ok bool) {
	e, ok := errors.AsType[Error](err)
	if !ok {
		return "", "", false
	}
	field, reason = e.InputField()
	return field, reason, true
}
