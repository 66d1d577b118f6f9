package hop

import (
	"context"
	"io"
	"net/http/httptrace"
	"sync"
	"time"
)

// wait is a request's header timer through its phases: armed while
// connecting, paused while the caller's body is sent, armed again once the
// endpoint has the whole request. It also measures what the endpoint owed:
// connecting plus waiting, never the upload.
//
// Whether the timer went off is learnt from Stop and Reset, under mu, so
// that its function can be the request's cancel itself: no closure to
// allocate. An unpooled wait's timer is made with that cancel, and then
// times the body's reads (idleBody). A pooled wait keeps one timer, whose
// function is fire, across requests: a wait goes back to the pool only
// when nothing can touch it any more, the Sender having said no hook
// comes after it returned and every Stop having found the timer still
// pending, so that no run of fire can be on its way.
type wait struct {
	mu      sync.Mutex
	timeout time.Duration
	cancel  context.CancelFunc
	timer   *time.Timer
	armed   bool // the timer was set and not stopped since
	fired   bool // a Stop or Reset found it had gone off
	done    bool
	start   time.Time // when the request began
	connAt  time.Time // zero until the connection was up
	sentAt  time.Time // zero until the endpoint had the whole request

	// The body, for a wait that is not pooled: one allocation for both.
	b idleBody
}

var waits sync.Pool

// newWait arms a wait for a request whose context cancel ends. pool takes
// a pooled wait, for a Sender that may return it to the pool.
func newWait(timeout time.Duration, cancel context.CancelFunc, pool bool) *wait {
	if !pool {
		w := &wait{timeout: timeout, cancel: cancel, armed: true, start: time.Now()}
		w.timer = time.AfterFunc(timeout, cancel)
		return w
	}
	w, _ := waits.Get().(*wait)
	if w == nil {
		w = &wait{}
		w.timer = time.AfterFunc(time.Hour, w.fire)
		w.timer.Stop()
	}
	// Not shared yet: its timer is stopped, and no run of fire is left.
	w.timeout, w.cancel = timeout, cancel
	w.fired, w.done = false, false
	w.connAt, w.sentAt = time.Time{}, time.Time{}
	w.start = time.Now()
	w.armed = true
	w.timer.Reset(timeout)
	return w
}

// fire is a pooled wait's timer function.
func (w *wait) fire() {
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// disarm stops the timer, noting whether it had gone off; the caller
// holds mu.
func (w *wait) disarm() {
	if w.armed && !w.timer.Stop() {
		w.fired = true
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
	if w.disarm(); w.fired {
		return
	}
	w.timer.Reset(w.timeout)
	w.armed = true
}

// stop ends the wait. It reports whether the timer went off, and what the
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

// recycle pools a stopped pooled wait that nothing can touch any more,
// and reports whether it did; direct says the Sender will call no hook
// after it returned.
func (w *wait) recycle(pooled, direct bool) bool {
	if !pooled {
		return false
	}
	w.mu.Lock()
	ok := direct && w.done && !w.fired
	w.cancel = nil
	w.mu.Unlock()
	if ok {
		waits.Put(w)
	}
	return ok
}

// body makes the stopped, unpooled wait rc's idle body, its timer (whose
// function is the request's cancel) now timing the body's reads.
func (w *wait) body(rc io.ReadCloser, idle time.Duration, endpoint string) *idleBody {
	w.b = idleBody{rc: rc, idle: idle, cancel: w.cancel, endpoint: endpoint, timer: w.timer}
	w.b.early, _ = rc.(Buffered)
	return &w.b
}
