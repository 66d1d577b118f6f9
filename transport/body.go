package transport

import (
	"context"
	"io"
	"time"
)

// body is a response body whose reads are watched by the idle timer.
//
// The timer runs only while a Read waits: a caller that pauses between reads
// has not seen the host stall. It is the header timer reused, whose
// function cancels the request's context; that cancellation is what stops a
// waiting read in a base that honours it, as http.Transport does. Its
// function being cancel itself, not a closure, saves an allocation per
// request, and Stop's result tells whether it fired.
type body struct {
	rc       io.ReadCloser
	timer    *time.Timer
	cancel   context.CancelFunc
	idle     time.Duration
	endpoint string
	expired  bool // The timer fired; every later Read fails with a timeout.
}

// Read reads from the response body, cutting it with a timeout error if a
// single read waits longer than the idle timeout.
func (b *body) Read(p []byte) (int, error) {
	if b.expired {
		return 0, b.timeout()
	}
	b.timer.Reset(b.idle)
	n, err := b.rc.Read(p)
	if !b.timer.Stop() {
		b.expired = true
		// The read may have finished as the timer fired; a complete body
		// is still complete, and bytes read are still returned.
		if err != nil && err != io.EOF {
			err = b.timeout()
		}
	}
	if err == io.EOF {
		// The context governs the read, so it is released only now.
		b.cancel()
	}
	return n, err
}

// Close closes the response body and releases the request's context.
func (b *body) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

func (b *body) timeout() error {
	return &timeoutError{endpoint: b.endpoint, body: true, after: b.idle}
}
