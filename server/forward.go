package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

// forward sends req upstream under a guard ticket for its origin, for the
// fetch route and the proxy. Where the guarded transport charges the
// header timeout from the start of the request, forward charges time to
// whoever spends it:
//
//   - connecting (dial and TLS) is the upstream's, bounded by the timeout;
//   - sending the request body is the client's, bounded by the client-side
//     read timeouts, never charged to the upstream;
//   - waiting for response headers is the upstream's: the timeout starts
//     once the upstream has the whole request.
//
// A client that goes away while the upstream owes it headers has given up
// on it. After GiveUpAfter of that wait, the give-up counts as a
// host-level timeout (most real clients have timeouts shorter than the
// daemon's, and would otherwise never trip the guard); a shorter one is
// inconclusive, like any cancellation.
//
// The guard is asked before anything else, so a fast-fail does no DNS
// lookup and no dial.
func (s *Server) forward(req *http.Request, h hints) (*http.Response, error) {
	ctx := req.Context()
	acquire := s.guard.Acquire
	if h.exempt {
		acquire = s.guard.AcquireExempt
	}
	ticket, err := acquire(req.URL.Scheme + "://" + req.URL.Host)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// Release is a no-op after a report; here it is the backstop that
	// frees a trial slot on every path, panics included.
	defer ticket.Release()

	timeout := s.cfg.HeaderTimeout
	if h.timeout > 0 {
		timeout = h.timeout
	}
	uctx, cancel := context.WithCancelCause(ctx)
	hw := newHeaderWait(timeout, cancel)
	resp, direct, err := s.upstream.roundTrip(uctx, req, hw)
	fired, waited := hw.stop()
	hw.recycle(direct)
	if err != nil {
		cancel(nil)
		switch {
		case fired:
			err = &headerTimeoutError{after: timeout}
			ticket.Failed(err)
		case ctx.Err() != nil:
			// A shutdown cancels every request too; that says nothing
			// about the upstream.
			if gu := s.giveUpAfter(); gu > 0 && waited >= gu && s.baseCtx.Err() == nil {
				err = &giveUpError{waited: waited}
				ticket.Failed(err)
				return nil, err
			}
			ticket.Release()
			return nil, ctx.Err()
		default:
			ticket.Failed(err)
		}
		return nil, err
	}
	ticket.Answered()
	if fired {
		// The timer fired as the headers arrived and cancelled the
		// context, so the body cannot be read.
		resp.Body.Close()
		cancel(nil)
		return nil, &headerTimeoutError{after: timeout}
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		cancel(nil)
		return resp, nil
	}
	resp.Body = newIdleBody(resp.Body, s.cfg.IdleTimeout, cancel)
	return resp, nil
}

// giveUpAfter is Config.GiveUpAfter with its default applied; 0 is off.
func (s *Server) giveUpAfter() time.Duration {
	if s.cfg.GiveUpAfter < 0 {
		return 0
	}
	return s.cfg.GiveUpAfter
}

// headerWait is a forwarded request's timer through its phases: armed
// while connecting, paused while the client's body is sent, armed again
// once the upstream has the whole request.
//
// Waits are pooled with their timers, since a timer per request was an
// allocation and a timer heap entry each time. A wait goes back to the
// pool only when nothing can touch it any more: the plain path served it
// (base may call its hooks after RoundTrip returned), its timer never
// fired, and every Stop found the timer still pending, so no run of fire
// can be on its way.
type headerWait struct {
	mu      sync.Mutex
	timeout time.Duration
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	armed   bool // the timer was set and not stopped since
	fired   bool
	done    bool
	stale   bool      // a Stop or Reset found the timer had gone off
	sentAt  time.Time // zero until the upstream had the whole request
}

var (
	errHeaderWait = errors.New("server: upstream header wait ended")
	headerWaits   sync.Pool
)

func newHeaderWait(timeout time.Duration, cancel context.CancelCauseFunc) *headerWait {
	hw, _ := headerWaits.Get().(*headerWait)
	if hw == nil {
		hw = &headerWait{}
		hw.timer = time.AfterFunc(time.Hour, hw.fire)
		hw.timer.Stop()
	}
	// Not shared yet: its timer is stopped, and no run of fire is left.
	hw.timeout, hw.cancel = timeout, cancel
	hw.fired, hw.done, hw.stale, hw.sentAt = false, false, false, time.Time{}
	hw.armed = true
	hw.timer.Reset(timeout)
	return hw
}

func (hw *headerWait) fire() {
	hw.mu.Lock()
	if hw.done {
		hw.mu.Unlock()
		return
	}
	hw.fired = true
	cancel := hw.cancel
	hw.mu.Unlock()
	cancel(errHeaderWait)
}

// disarm stops the timer; the caller holds mu.
func (hw *headerWait) disarm() {
	if hw.armed && !hw.timer.Stop() {
		hw.stale = true
	}
	hw.armed = false
}

// gotConn pauses the timer: the connection is up, and what follows is
// the client's upload until wroteRequest.
func (hw *headerWait) gotConn(httptrace.GotConnInfo) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if !hw.done && !hw.fired && hw.sentAt.IsZero() {
		hw.disarm()
	}
}

// wroteRequest starts the upstream's wait. The trace may call it after
// RoundTrip returned (an upstream that answers before reading the whole
// body); done keeps it from re-arming a finished timer.
func (hw *headerWait) wroteRequest(httptrace.WroteRequestInfo) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if hw.done || hw.fired {
		return
	}
	hw.sentAt = time.Now()
	if !hw.timer.Reset(hw.timeout) && hw.armed {
		hw.stale = true
	}
	hw.armed = true
}

// stop ends the wait. It reports whether the timer fired, and how long the
// upstream had had the whole request (0 if it never had).
func (hw *headerWait) stop() (fired bool, waited time.Duration) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.done = true
	hw.disarm()
	if !hw.sentAt.IsZero() {
		waited = time.Since(hw.sentAt)
	}
	return hw.fired, waited
}

// recycle pools a stopped wait that nothing can touch any more; direct
// says the plain path served the request.
func (hw *headerWait) recycle(direct bool) {
	hw.mu.Lock()
	ok := direct && hw.done && !hw.fired && !hw.stale
	hw.cancel = nil
	hw.mu.Unlock()
	if ok {
		headerWaits.Put(hw)
	}
}

// headerTimeoutError is an upstream that did not send its response headers
// within the header timeout. It classifies as a timeout.
type headerTimeoutError struct{ after time.Duration }

func (e *headerTimeoutError) Error() string {
	return fmt.Sprintf("server: no response headers within %v of the upstream having the request", e.after)
}
func (e *headerTimeoutError) Timeout() bool   { return true }
func (e *headerTimeoutError) Temporary() bool { return true }
func (e *headerTimeoutError) Unwrap() error   { return context.DeadlineExceeded }

// giveUpError is a client that left after the upstream had its whole
// request for at least GiveUpAfter without answering: evidence of a
// host-level timeout, so it classifies as one.
type giveUpError struct{ waited time.Duration }

func (e *giveUpError) Error() string {
	return fmt.Sprintf("server: the client gave up after the upstream owed it headers for %v", e.waited.Round(time.Millisecond))
}
func (e *giveUpError) Timeout() bool   { return true }
func (e *giveUpError) Temporary() bool { return true }
func (e *giveUpError) Unwrap() error   { return context.DeadlineExceeded }

// idleBody cuts an upstream body that stalls for idle. Its timer runs only
// while a Read waits for the upstream: a client that reads slowly holds
// the proxy in its write, and that time is the client's, never charged to
// the upstream. A body that keeps arriving is never cut.
type idleBody struct {
	rc     io.ReadCloser
	idle   time.Duration
	timer  *time.Timer // made at the first read that may wait
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	stall  bool
	// early, when rc has it, says a read would be answered from what is
	// buffered already: no timer is needed for it. A small answer is
	// usually read whole with the head, so it is read without one.
	early bufferedBody
}

// bufferedBody is a body that knows when its next read cannot wait for
// the upstream.
type bufferedBody interface{ readable() bool }

var errStalled = errors.New("server: upstream body stalled")

func newIdleBody(rc io.ReadCloser, idle time.Duration, cancel context.CancelCauseFunc) *idleBody {
	b := &idleBody{rc: rc, idle: idle, cancel: cancel}
	b.early, _ = rc.(bufferedBody)
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	var n int
	var err error
	if b.early != nil && b.early.readable() {
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
	if err != nil && err != io.EOF {
		b.mu.Lock()
		stalled := b.stall
		b.mu.Unlock()
		if stalled {
			// Not a cancellation: the caller must abort, so that a
			// truncated body never looks complete.
			return n, errStalled
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

func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	err := b.rc.Close()
	b.cancel(nil)
	return err
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// clientBody bounds a client's upload: every read must make progress
// within idle, or the read fails. It is what keeps a slow upload, whose
// time is the client's, from holding a ticket forever.
type clientBody struct {
	r    io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
}

func (b *clientBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	n, err := b.r.Read(p)
	if err != nil {
		// The body is in (or broken): lift the bound, or the server's
		// background read would hit it while the upstream is still
		// thinking and take the client for gone.
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *clientBody) Close() error { return b.r.Close() }
