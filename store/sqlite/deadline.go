package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 5 * time.Second

// busyWait is how long a write waits for another process's write lock
// when Timeout is off: SQLite's busy timeout, as it always was.
const busyWait = 10 * time.Second

// Config tunes a Store. The zero Config is the defaults.
type Config struct {
	// Timeout bounds each wait of a write: for the one writer connection
	// (behind the writes queued before it), and for another process's
	// write lock on the file (SQLite's busy timeout). Past it the write
	// fails, having written nothing, with an error the daemon answers
	// with 503 and Retry-After (context.DeadlineExceeded, or SQLITE_BUSY).
	// A transaction that holds the lock waits on nothing and is not cut.
	// Reads never wait for a lock (WAL mode) and are not bounded.
	// Default DefaultTimeout; zero means the default, negative none (a
	// write then waits for the queue as long as it takes, and 10 s for
	// another process's lock).
	Timeout time.Duration
}

func (c Config) timeout() time.Duration {
	switch {
	case c.Timeout < 0:
		return 0
	case c.Timeout == 0:
		return DefaultTimeout
	}
	return c.Timeout
}

// busyTimeout is SQLite's busy timeout for the writer, in milliseconds:
// the store's timeout, so that a lock held by another process ends in
// SQLITE_BUSY within it.
func (c Config) busyTimeout() int64 {
	if d := c.timeout(); d > 0 {
		return max(d.Milliseconds(), 1)
	}
	return busyWait.Milliseconds()
}

// bound gives one write's waits their deadline. end releases it and
// returns err, or the timeout's own error when the deadline is what made
// the write fail, whatever the driver made of it.
func (s *Store) bound(ctx context.Context) (bctx context.Context, end func(err error) error) {
	if s.timeout <= 0 {
		return ctx, func(err error) error { return err }
	}
	bctx, cancel := context.WithTimeoutCause(ctx, s.timeout, errTimedOut)
	return bctx, func(err error) error {
		if err != nil && context.Cause(bctx) == errTimedOut && !errors.Is(err, errTimedOut) {
			err = fmt.Errorf("%w (%v)", errTimedOut, err)
		}
		cancel()
		return err
	}
}

// errTimedOut is the cause of a write's deadline; it wraps
// context.DeadlineExceeded, which is what callers test.
var errTimedOut = &timeoutError{}

type timeoutError struct{}

func (*timeoutError) Error() string { return "sqlite: no answer within the store timeout" }
func (*timeoutError) Unwrap() error { return context.DeadlineExceeded }
