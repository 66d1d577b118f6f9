package hop

import (
	"context"
	"io"
	"time"
)

// idleBody cuts a body that stalls for idle. Its timer runs only while a
// Read waits for the endpoint: a caller that reads slowly (a proxy's
// client holding it in its write) spends its own time, never charged to
// the endpoint. A body that keeps arriving is never cut, and a stall does
// not count against the endpoint, which answered.
//
// The timer's function is the request's cancel, which is what stops a
// waiting read; Stop's result says whether it went off.
type idleBody struct {
	rc       io.ReadCloser
	idle     time.Duration
	timer    *time.Timer // made at the first read that may wait, unless given
	cancel   context.CancelFunc
	endpoint string
	expired  bool // the timer went off: every later Read fails with a timeout
	// early, when rc has it, says a read would be answered from what is
	// buffered already: no timer is needed for it. A small answer is
	// usually read whole with the head, so it is read without one.
	early Buffered
}

// Buffered is a body that knows when its next read cannot wait for the
// endpoint.
type Buffered interface{ Readable() bool }

func newIdleBody(rc io.ReadCloser, idle time.Duration, cancel context.CancelFunc, endpoint string) *idleBody {
	b := &idleBody{rc: rc, idle: idle, cancel: cancel, endpoint: endpoint}
	b.early, _ = rc.(Buffered)
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.expired {
		return 0, b.timeout()
	}
	var n int
	var err error
	if b.early != nil && b.early.Readable() {
		n, err = b.rc.Read(p)
	} else {
		if b.timer == nil {
			b.timer = time.AfterFunc(b.idle, b.cancel)
		} else {
			b.timer.Reset(b.idle)
		}
		n, err = b.rc.Read(p)
		if !b.timer.Stop() {
			b.expired = true
			// The read may have finished as the timer went off; a
			// complete body is still complete, and bytes read are
			// still returned.
			if err != nil && err != io.EOF {
				// A timeout, not a cancellation: the caller must
				// abort, so that a truncated body never looks complete.
				err = b.timeout()
			}
		}
	}
	if err == io.EOF {
		// The context governs the read, so it is released only now.
		b.cancel()
	}
	return n, err
}

func (b *idleBody) timeout() error {
	return &TimeoutError{Endpoint: b.endpoint, Body: true, After: b.idle}
}

// Close closes the body and releases the request's context.
func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	err := b.rc.Close()
	b.cancel()
	return err
}
