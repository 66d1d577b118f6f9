package server

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The token's guess limit: authBurst wrong credentials at once, then one
// more per authRefill. Programs send the right token; this only slows a
// guesser, to 600 tries an hour.
const (
	authBurst  = 20
	authRefill = 6 * time.Second
)

// authLimit slows down guessing the daemon's token. Every wrong
// credential presented (a bearer header, proxy credentials, the login
// form's token) counts; a missing one does not, since it guesses nothing.
// Past the limit, every presented credential is refused with 429 until
// an allowance comes back, the right one too: a guess made during the
// block must learn nothing. The programs the daemon serves send the right
// token and never meet it; a client with a stale token that keeps trying
// locks the others out until it stops, and the 429 says so.
//
// The count is the generic cell rate algorithm: each failure moves tat
// (the theoretical arrival time) on by authRefill; once tat runs
// authBurst refills ahead of now, credentials are refused until it is
// back to one refill less.
type authLimit struct {
	now func() time.Time
	mu  sync.Mutex
	tat time.Time
	// until is when the block ends, in Unix nanoseconds; 0 when there is
	// none, so that a check with the right token reads one word and no
	// clock.
	until atomic.Int64
}

// wait is how long every presented credential is still refused.
func (l *authLimit) wait() time.Duration {
	until := l.until.Load()
	if until == 0 {
		return 0
	}
	d := time.Duration(until - l.now().UnixNano())
	if d <= 0 {
		l.until.CompareAndSwap(until, 0)
		return 0
	}
	return d
}

// failed counts a wrong credential. It reports whether this one started a
// block, so that the block is logged once.
func (l *authLimit) failed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.tat.Before(now) {
		l.tat = now
	}
	l.tat = l.tat.Add(authRefill)
	if l.tat.Sub(now) < authBurst*authRefill {
		return false
	}
	l.until.Store(l.tat.Add(-(authBurst - 1) * authRefill).UnixNano())
	return true
}

// authBlocked is the answer to a credential presented during a block.
func authBlocked(wait time.Duration) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, RetryAfter: wait,
		Message: "server: too many wrong tokens in a short time; every credential is refused for " +
			strconv.FormatInt(retryAfterSeconds(wait), 10) + " s (a client with a stale token may still be trying)"}
}

// checkToken compares a credential under the guess limit: ok, or refused
// with the error to answer. A missing credential is refused without being
// counted; refused is nil for it, and the caller answers as it does for
// a wrong one.
func (s *Server) checkToken(presented bool, match func() bool) (ok bool, refused *apiError) {
	if !s.token.set {
		return true, nil
	}
	if !presented {
		return false, nil
	}
	if wait := s.authLimit.wait(); wait > 0 {
		return false, authBlocked(wait)
	}
	if match() {
		return true, nil
	}
	if s.authLimit.failed() {
		s.log.Warn("server: too many wrong tokens in a short time; refusing every credential for a while",
			"for", s.authLimit.wait().Round(time.Second).String())
	}
	return false, nil
}
