package transport

import (
	"context"
	"fmt"
	"time"
)

// timeoutError reports a host that stayed silent too long, before its
// headers or in the middle of its body. It is a net.Error whose Timeout
// reports true, so failure.Classify treats a header timeout as host-level.
//
// It unwraps to context.DeadlineExceeded rather than to what the base
// transport returned: the base saw the cancellation this package used to stop
// it, and a chain holding context.Canceled would read as the caller giving up.
type timeoutError struct {
	endpoint string
	body     bool // false: no headers in time; true: the body stalled.
	after    time.Duration
}

func (e *timeoutError) Error() string {
	if e.body {
		return fmt.Sprintf("transport: %s: response body stalled for %v", e.endpoint, e.after)
	}
	return fmt.Sprintf("transport: %s: no response headers within %v", e.endpoint, e.after)
}

// Timeout reports true: the error is a timeout in the sense of net.Error.
func (e *timeoutError) Timeout() bool { return true }

// Temporary reports true, as for every timeout; it completes net.Error.
func (e *timeoutError) Temporary() bool { return true }

func (e *timeoutError) Unwrap() error { return context.DeadlineExceeded }
