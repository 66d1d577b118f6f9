package hop

import (
	"context"
	"errors"
	"net/http/httptrace"
	"sync"
	"time"
)

// wait is a request's header timer through its phases: armed while
// connecting, paused while the caller's body is sent, armed again once the
// endpoint has the whole request. It also measures what the endpoint owed:
// connecting plus waiting, never the upload.
//
// Waits are pooled with their timers, since a timer per request was an
// allocation and a timer heap entry each time. A wait goes back to the
// pool only when nothing can touch it any more: the Sender said no hook
// comes after it returned, its timer never fired, and every Stop found
// the timer still pending, so no run of fire can be on its way.
type wait struct {
	mu      sync.Mutex
	timeout time.Duration
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	armed   bool // the timer was set and not stopped since
	fired   bool
	done    bool
	stale   bool      // a Stop or Reset found the timer had gone off
	start   time.Time // when the request began
	connAt  time.Time // zero until the connection was up
	sentAt  time.Time // zero until the endpoint had the whole request
}

var (
	errHeaderWait = errors.New("transport: header wait ended")
	waits         sync.Pool
)

func newWait(timeout time.Duration, cancel context.CancelCauseFunc) *wait {
	w, _ := waits.Get().(*wait)
	if w == nil {
		w = &wait{}
		w.timer = time.AfterFunc(time.Hour, w.fire)
		w.timer.Stop()
	}
	// Not shared yet: its timer is stopped, and no run of fire is left.
	w.timeout, w.cancel = timeout, cancel
	w.fired, w.done, w.stale = false, false, false
	w.connAt, w.sentAt = time.Time{}, time.Time{}
	w.start = time.Now()
	w.armed = true
	w.timer.Reset(timeout)
	return w
}

func (w *wait) fire() {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	w.fired = true
	cancel := w.cancel
	w.mu.Unlock()
	cancel(errHeaderWait)
}

// disarm stops the timer; the caller holds mu.
func (w *wait) disarm() {
	if w.armed && !w.timer.Stop() {
		w.stale = true
	}
	w.armed = false
}

// GotConn pauses the timer: the connection is up, and what follows is the
// caller's upload until WroteRequest.
func (w *wait) GotConn(httptrace.GotConnInfo) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && !w.fired && w.sentAt.IsZero() {
		w.connAt = time.Now()
		w.disarm()
	}
}

// WroteRequest starts the endpoint's wait. A Sender may call it after
// Send returned (an endpoint that answers before reading the whole body);
// done keeps it from re-arming a finished timer.
func (w *wait) WroteRequest(httptrace.WroteRequestInfo) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.fired {
		return
	}
	w.sentAt = time.Now()
	if !w.timer.Reset(w.timeout) && w.armed {
		w.stale = true
	}
	w.armed = true
}

// stop ends the wait. It reports whether the timer fired, and what the
// endpoint owed: the time until the connection was up, plus the time
// since it had the whole request; all of it for a Sender that reports no
// phases.
func (w *wait) stop() (fired bool, owed time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.disarm()
	now := time.Now()
	switch {
	case w.connAt.IsZero():
		owed = now.Sub(w.start)
	case w.sentAt.IsZero():
		owed = w.connAt.Sub(w.start) // the upload was still under way
	default:
		owed = w.connAt.Sub(w.start) + now.Sub(w.sentAt)
	}
	return w.fired, owed
}

// recycle pools a stopped wait that nothing can touch any more; direct
// says the Sender will call no hook after it returned.
func (w *wait) recycle(direct bool) {
	w.mu.Lock()
	ok := direct && w.done && !w.fired && !w.stale
	w.cancel = nil
	w.mu.Unlock()
	if ok {
		waits.Put(w)
	}
}

var errStalled = errors.New("transport: response body stalled")
