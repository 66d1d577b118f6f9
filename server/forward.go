package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/hop"
)

// forward sends req upstream under a guard ticket for its origin, for the
// fetch route and the proxy, by the forwarding rules the guarded
// transport follows too (internal/hop), over the daemon's own upstream
// pool: connecting and waiting for headers are the upstream's, bounded
// by the header timeout, and sending the request body is the client's,
// never charged.
//
// A client that goes away while the upstream owes it headers cannot be
// told from one whose timeout ran out: it has given up, and the guard's
// wait rule judges that by how long the upstream had owed its answer
// against what it needs. So does the expiry of a Hostguard-Timeout hint,
// which the client chose: only the operator's own header timeout counts
// whatever its length.
//
// The guard is asked before anything else, so a fast-fail does no DNS
// lookup and no dial.
func (s *Server) forward(req *http.Request, h hints) (*http.Response, error) {
	ticket, err := s.acquire(req.Context(), req.URL.Scheme+"://"+req.URL.Host, h)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// Release is a no-op after a report; here it is the backstop that
	// frees a trial slot on every path, panics included.
	defer ticket.Release()
	r := hop.Rules{Timeout: s.cfg.HeaderTimeout, Idle: s.cfg.IdleTimeout, Left: true, Stopping: s.baseCtx}
	if h.timeout > 0 {
		r.Timeout, r.Chosen = h.timeout, true
	}
	return hop.RoundTrip(req.Context(), req, ticket, r, s.upstream)
}

// acquire asks the guard for the endpoint of u. A request that finds the
// endpoint's half-open trial out waits for it (guard.trial_wait) no longer
// than its client waits: until ctx, the client's connection, ends, and so
// that what is left of a Hostguard-Timeout hint still covers what the
// host needs to answer. A client that chose its timeout hears a fast-fail
// in time, rather than giving up on a request still waiting.
func (s *Server) acquire(ctx context.Context, u string, h hints) (*guard.Ticket, error) {
	if h.exempt {
		return s.guard.AcquireExempt(u)
	}
	if h.timeout > 0 {
		ctx = &hintContext{Context: ctx, deadline: time.Now().Add(h.timeout)}
	}
	return s.guard.AcquireContext(ctx, u)
}

// hintContext adds a Hostguard-Timeout hint's deadline to a request's
// context for the guard, which reads it only to cut a wait for the trial
// short of it, so it needs no timer of its own (context.WithTimeout would
// start one for every hinted request).
type hintContext struct {
	context.Context
	deadline time.Time
}

func (c *hintContext) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// gaveUp reports whether err is a client that went away before its
// answer, as forward returns it: while the upstream owed its answer, or
// while the request waited for the endpoint's trial.
func gaveUp(err error) bool {
	w, ok := errors.AsType[*guard.WaitError](err)
	return ok && w.Err == nil || errors.Is(err, guard.ErrGaveUp)
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
