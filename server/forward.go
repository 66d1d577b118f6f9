package server

import (
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
	r := hop.Rules{Timeout: s.cfg.HeaderTimeout, Idle: s.cfg.IdleTimeout, Left: true, Stopping: s.baseCtx}
	if h.timeout > 0 {
		r.Timeout, r.Chosen = h.timeout, true
	}
	return hop.RoundTrip(req.Context(), req, ticket, r, s.upstream)
}

// gaveUp reports whether err is a client that went away before its
// answer, as forward returns it.
func gaveUp(err error) bool {
	w, ok := errors.AsType[*guard.WaitError](err)
	return ok && w.Err == nil
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
