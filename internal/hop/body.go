package hop

import (
	"context"
	"io"
	"sync"
	"time"
)

// idleBody cuts a body that stalls for idle. Its timer runs only while a
// Read waits for the endpoint: a caller that reads slowly (a proxy's
// client holding it in its write) spends its own time, never charged to
// the endpoint. A body that keeps arriving is never cut, and a stall does
// not count against the endpoint, which answered.
type idleBody struct {
	rc       io.ReadCloser
	idle     time.Duration
	timer    *time.Timer // made at the first read that may wait
	cancel   context.CancelCauseFunc
	endpoint string
	mu       sync.Mutex
	stall    bool
	// early, when rc has it, says a read would be answered from what is
	// buffered already: no timer is needed for it. A small answer is
	// usually read whole with the head, so it is read without one.
	early Buffered
}

// Buffered is a body that knows when its next read cannot wait for the
// endpoint.
type Buffered interface{ Readable() bool }

func newIdleBody(rc io.ReadCloser, idle time.Duration, cancel context.CancelCauseFunc, endpoint string) *idleBody {
	b := &idleBody{rc: rc, idle: idle, cancel: cancel, endpoint: endpoint}
	b.early, _ = rc.(Buffered)
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	var n int
	var err error
	if b.early != nil && b.early.Readable() {
		n, err = b.rc.Read(p)
	} else {
		if b.timer == nil {
			b.timer = time.AfterFunc(b.idle, b.stalled)
		} else {
			b.timer.Reset(b.idle)
		}
		n, err = b.rc.Read(p)
		b.timer.Stop()
	}
	if err == io.EOF {
		// The context governs the read, so it is released only now.
		b.cancel(nil)
		return n, err
	}
	if err != nil {
		b.mu.Lock()
		stalled := b.stall
		b.mu.Unlock()
		if stalled {
			// A timeout, not a cancellation: the caller must abort, so
			// that a truncated body never looks complete.
			return n, &TimeoutError{Endpoint: b.endpoint, Body: true, After: b.idle}
		}
	}
	return n, err
}

func (b *idleBody) stalled() {
	b.mu.Lock()
	b.stall = true
	b.mu.Unlock()
	b.cancel(errStalled)
}

// Close closes the body and releases the request's context.
func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	err := b.rc.Close()
	b.cancel(nil)
	return err
}
