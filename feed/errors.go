package feed

import "errors"

// ErrInvalid is matched (with errors.Is) by every *InputError: a bad
// feed name, Config or LoopConfig value, refused before anything is read
// or stored.
var ErrInvalid = errors.New("feed: invalid input")

// InputError is bad input. Field is the input's name as the daemon's
// configuration spells it ("name", "max_pages", "feeds[2].name"); the
// caller at the boundary prefixes or renames it. It matches ErrInvalid.
type InputError struct {
	Field, Reason string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return "feed: " + e.Reason
	}
	return "feed: " + e.Field + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }
