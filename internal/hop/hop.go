// Package hop is the one implementation of hostguard's forwarding rules:
// how one request to one endpoint is timed, what its end says about the
// endpoint, and how its body's stalls are cut. The guarded transport and
// the daemon's fetch route and proxy all send through RoundTrip; they
// differ only in the Sender underneath (a net/http RoundTripper, or the
// daemon's own upstream pool) and in Rules.
//
// Time is charged to whoever spends it:
//
//   - connecting (dial and TLS) is the endpoint's, bounded by the header
//     timeout;
//   - sending the request body is the caller's and never charged (a
//     Sender reports the phases: GotConn pauses the timer, WroteRequest
//     starts the endpoint's wait afresh);
//   - waiting for response headers is the endpoint's, bounded by the
//     header timeout;
//   - reading the body is bounded per read by the idle timeout, and a
//     stall is never held against an endpoint that answered.
//
// What the endpoint owed when the request ended (connecting plus waiting,
// never the upload) goes to the guard: with an answer, as what it needed
// (guard.Ticket.AnsweredAfter); with a caller that stopped waiting, as a
// *guard.WaitError that the guard's wait rule judges.
package hop

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// Phases hears a request's progress: the connection is up, then the
// endpoint has the whole request.
type Phases interface {
	GotConn(httptrace.GotConnInfo)
	WroteRequest(httptrace.WroteRequestInfo)
}

// Sender sends one request, bounded by ctx instead of req's own context,
// and tells ph when the connection is up and when the whole request was
// written. A Sender that reports no phases has its connecting and writing
// counted in the endpoint's wait. direct reports that every call to ph
// happened before Send returned.
type Sender interface {
	Send(ctx context.Context, req *http.Request, ph Phases) (resp *http.Response, direct bool, err error)
	// Pooled says the Sender runs where timers may be shared between
	// requests: never inside a testing/synctest bubble, whose timers must
	// not be used outside it. A library cannot know where its callers
	// run, so Base says no.
	Pooled() bool
}

// Base sends through a net/http RoundTripper. A request with a body is
// traced, so that its upload is not charged; a bodyless one is sent as it
// is, without the allocations of a trace, its head's write counted in the
// wait.
type Base struct{ RT http.RoundTripper }

// Send implements Sender.
func (b *Base) Send(ctx context.Context, req *http.Request, ph Phases) (*http.Response, bool, error) {
	var ureq *http.Request
	traced := req.Body != nil && req.Body != http.NoBody
	if !traced {
		ureq = req.WithContext(ctx)
	} else {
		// A new trace every time: WithClientTrace composes the caller's
		// own trace into it, and the RoundTripper may call its hooks
		// after returning.
		trace := &httptrace.ClientTrace{GotConn: ph.GotConn, WroteRequest: ph.WroteRequest}
		ureq = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	}
	resp, err := b.RT.RoundTrip(ureq)
	if resp != nil && resp.Request == ureq {
		resp.Request = req
	}
	return resp, !traced, err
}

// Pooled implements Sender: never, see there.
func (b *Base) Pooled() bool { return false }

// Rules are one request's limits and what its end means.
type Rules struct {
	// Timeout bounds connecting, and then the wait for headers once the
	// endpoint has the whole request.
	Timeout time.Duration
	// Chosen says Timeout is the caller's choice for this request (a
	// Hostguard-Timeout hint), not the operator's: its expiry is a caller
	// that stopped waiting, judged by the guard's wait rule, rather than
	// the endpoint not answering.
	Chosen bool
	// Idle bounds each wait for the body's next bytes.
	Idle time.Duration
	// Left says a cancellation of the request's context is its client
	// going away, which a proxy cannot tell from the client's timeout:
	// a give-up under the wait rule. Otherwise only a cancellation at or
	// after the context's deadline is one (see RoundTrip).
	Left bool
	// Stopping, if set, ends when the program shuts down: a request cut
	// by that says nothing about its endpoint.
	Stopping context.Context
}

// RoundTrip sends req, which t admits, through s under r, and settles t.
// It returns the answer, whose body is cut when it stalls, or the error:
// a *guard.WaitError when the caller stopped waiting (whether the guard
// counts it or not), a timeout error when the header timeout expired, or
// what the Sender returned.
//
// A caller's deadline reaches a RoundTripper in two ways: as the
// context's deadline, or, from http.Client.Timeout with a RoundTripper
// that is not net/http's own, as a cancellation (of the request's Cancel
// channel) that net/http's timer races against that deadline. Either is
// the caller's give-up when it comes at or after the deadline; a
// cancellation before any deadline is the caller's own business and
// inconclusive, unless Rules.Left.
func RoundTrip(ctx context.Context, req *http.Request, t *guard.Ticket, r Rules, s Sender) (*http.Response, error) {
	uctx, cancel := context.WithCancel(ctx)
	pool := s.Pooled()
	w := newWait(r.Timeout, cancel, pool)
	returned := false
	defer func() {
		if !returned {
			// The Sender panicked; the panic continues after this.
			w.stop()
			cancel()
		}
	}()
	resp, direct, err := s.Send(uctx, req, w)
	returned = true
	fired, owed := w.stop()
	w.recycle(pool, direct)
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close() // A Sender that breaks the contract.
		}
		cancel()
		return nil, failed(ctx, t, r, err, fired, owed)
	}
	if resp == nil {
		cancel()
		t.Release()
		return nil, errors.New("transport: base RoundTripper returned no response and no error")
	}
	t.AnsweredAfter(owed)
	switch {
	case fired:
		// The timer fired as the headers arrived and cancelled the
		// context, so the body cannot be read.
		if resp.Body != nil {
			resp.Body.Close()
		}
		cancel()
		return nil, &TimeoutError{Endpoint: t.Endpoint(), After: r.Timeout}
	case resp.StatusCode == http.StatusSwitchingProtocols:
		// The body is now a two-way stream that callers type-assert to
		// io.ReadWriteCloser, and the context may govern it; leave both
		// alone.
	case resp.Body == nil || resp.Body == http.NoBody:
		cancel()
	default:
		if pool {
			// The wait may be in the pool already, or its timer's
			// function is fire: the body times itself.
			resp.Body = newIdleBody(resp.Body, r.Idle, cancel, t.Endpoint())
		} else {
			resp.Body = w.body(resp.Body, r.Idle, t.Endpoint())
		}
	}
	return resp, nil
}

// failed settles t for a request that got no answer and returns the
// error to give the caller.
func failed(ctx context.Context, t *guard.Ticket, r Rules, err error, fired bool, owed time.Duration) error {
	switch {
	case fired:
		err = &TimeoutError{Endpoint: t.Endpoint(), After: r.Timeout}
		if r.Chosen {
			err = &guard.WaitError{Owed: owed, Err: err}
		}
		t.Failed(err)
		return err
	case r.Stopping != nil && r.Stopping.Err() != nil:
		// A shutdown cancels every request too; that says nothing
		// about the endpoint.
		t.Release()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	case callersDeadline(ctx):
		if !errors.Is(err, context.DeadlineExceeded) {
			err = context.DeadlineExceeded
		}
		err = &guard.WaitError{Owed: owed, Err: err}
	case ctx.Err() == nil:
	case r.Left:
		err = &guard.WaitError{Owed: owed}
	default:
		t.Release()
		return ctx.Err()
	}
	t.Failed(err)
	return err
}

// callersDeadline reports whether the caller's deadline has come: the
// context ended by it, or it has passed while net/http's client timer,
// which closes the request's Cancel channel at the deadline, beat the
// context's own timer to stopping the request.
func callersDeadline(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// TimeoutError reports an endpoint that stayed silent too long, before its
// headers or in the middle of its body. It is a net.Error whose Timeout
// reports true, so failure.Classify treats a header timeout as host-level.
//
// It unwraps to context.DeadlineExceeded rather than to what the Sender
// returned: the Sender saw the cancellation used to stop it, and a chain
// holding context.Canceled would read as the caller giving up.
type TimeoutError struct {
	Endpoint string
	Body     bool // false: no headers in time; true: the body stalled
	After    time.Duration
}

func (e *TimeoutError) Error() string {
	if e.Body {
		return fmt.Sprintf("transport: %s: response body stalled for %v", e.Endpoint, e.After)
	}
	return fmt.Sprintf("transport: %s: no response headers within %v", e.Endpoint, e.After)
}

// Timeout reports true: the error is a timeout in the sense of net.Error.
func (e *TimeoutError) Timeout() bool { return true }

// Temporary reports true, as for every timeout; it completes net.Error.
func (e *TimeoutError) Temporary() bool { return true }

func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// OwedFor returns how long the endpoint had owed its headers, After, so
// that the guard dates the timeout from when the request was sent; 0 for
// a stalled body, whose wait began after an answer.
func (e *TimeoutError) OwedFor() time.Duration {
	if e.Body {
		return 0
	}
	return e.After
}
