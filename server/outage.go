package server

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// outageRetryAfter is what a client is told to wait when the daemon's own
// machinery failed: long enough not to hammer a store that is restarting,
// short enough that work resumes soon after it is back.
const outageRetryAfter = 5 * time.Second

// outageAnswer is the answer to a store that could not be reached or did
// not answer in time (storeerr.Unavailable): 503, so clients retry after
// Retry-After instead of treating their request as wrong, with
// Proxy-Status proxy_internal_error (RFC 9209) for those that read it.
func outageAnswer(doing string) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, RetryAfter: outageRetryAfter, ProxyStatus: "proxy_internal_error",
		Message: "server: internal error while " + doing + "; try again after Retry-After"}
}

// errorLogEvery is how often a run of internal errors is logged: a store
// outage fails every request, and a line per request would bury the log.
const errorLogEvery = 10 * time.Second

// logFailure logs an answer of the daemon's own failing: a 500 (a bug, or
// a store refusing what it was asked) and an outage (a 503 of a store
// that could not be reached) each under their own limiter, so that an
// outage's steady stream of 503s never hides the one 500 beside it.
func (s *Server) logFailure(err error, e *apiError) {
	switch {
	case e.Status == http.StatusInternalServerError:
		s.errLog.log(s.log, s.cfg.Now(), "server: "+doing(err)+" failed", err)
	case e.ProxyStatus == "proxy_internal_error":
		s.outageLog.log(s.log, s.cfg.Now(), "server: "+doing(err)+" failed", err)
	}
}

// errorLimiter logs the first internal error at once, then at most one
// line per errorLogEvery, carrying how many were not logged since.
type errorLimiter struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (l *errorLimiter) log(log *slog.Logger, now time.Time, msg string, err error) {
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < errorLogEvery && !now.Before(l.last) {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	if n > 0 {
		log.Error(msg, "err", err, "repeated", n, "since", errorLogEvery)
		return
	}
	log.Error(msg, "err", err)
}
