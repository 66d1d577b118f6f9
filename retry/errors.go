package retry

import (
	"errors"
	"fmt"
)

// ErrLeaseLost reports a lease operation with a token that no longer holds
// the item: the item has been claimed again by someone else, or this lease
// was already settled in another way (a Fail after a Succeed, or the
// scheduler counted its repeated expiry as a failure). Nothing was changed.
var ErrLeaseLost = errors.New("retry: lease lost")

// ErrNotFound reports an id the scheduler does not hold.
var ErrNotFound = errors.New("retry: no such item")

// ErrInvalid is matched (with errors.Is) by every error that rejects a
// caller's input. Such an error names the bad field or value, and the call
// changed nothing.
var ErrInvalid = errors.New("retry: invalid input")

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: "retry: " + fmt.Sprintf(format, args...)}
}
