package server

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/hostguard/hostguard/server/internal/connlimit"
)

// The guess limit of one client: authBurst wrong credentials at once,
// then one more per authRefill.
const (
	authBurst  = 20
	authRefill = 6 * time.Second
	// maxAuthClients bounds the clients whose wrong credentials are
	// counted; past it, the client whose count is closest to its end is
	// forgotten.
	maxAuthClients = 4096
)

// authLimit counts wrong credentials (a bearer header, proxy credentials,
// the login form's token) per client address: an IPv4 address, or an
// IPv6 /64, which one host usually holds whole. A missing credential
// guesses nothing and is not counted.
//
// The right token is compared before any count is read, so it is never
// refused, whoever else guesses from wherever: no client can lock out
// another, not even one behind the same NAT or front proxy. Past its
// limit, a client's wrong credentials are answered 429 with Retry-After
// instead of 401. That tells a program with a stale token to back off
// and keeps one address's failures out of the log; it does not slow a
// guesser who can tell a 200 from a 429, so the defence against guessing
// is the token's length (see docs/design.md, "Guessing the token").
//
// Each client's count is the generic cell rate algorithm: each failure
// moves tat (the theoretical arrival time) on by authRefill; once tat
// runs authBurst refills ahead of now, its wrong credentials are refused
// until it is back to one refill less.
type authLimit struct {
	now     func() time.Time
	mu      sync.Mutex
	clients map[netip.Prefix]*authClient
}

type authClient struct {
	tat   time.Time
	until time.Time // the block's end; zero when none
}

// authClientKey is the address whose wrong credentials count together:
// the IPv4 address, or the IPv6 /64. A remote address that does not
// parse (not TCP) counts under the zero prefix.
func authClientKey(remote string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		host, _, splitErr := net.SplitHostPort(remote)
		if splitErr != nil {
			return netip.Prefix{}
		}
		a, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Prefix{}
		}
		ap = netip.AddrPortFrom(a, 0)
	}
	return connlimit.ClientPrefix(ap.Addr())
}

// wait is how long the client's wrong credentials are still refused.
func (l *authLimit) wait(key netip.Prefix) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clients[key]
	if c == nil || c.until.IsZero() {
		return 0
	}
	d := c.until.Sub(l.now())
	if d <= 0 {
		c.until = time.Time{}
		return 0
	}
	return d
}

// failed counts a wrong credential from key. It reports whether this one
// started a block, so that the block is logged once.
func (l *authLimit) failed(key netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.clients[key]
	if c == nil {
		c = l.addLocked(key, now)
	}
	if c.tat.Before(now) {
		c.tat = now
	}
	c.tat = c.tat.Add(authRefill)
	if c.tat.Sub(now) < authBurst*authRefill {
		return false
	}
	c.until = c.tat.Add(-(authBurst - 1) * authRefill)
	return true
}

// addLocked starts counting key, making room first if the table is full:
// counts that have run out are dropped, then (when every one is live,
// which takes maxAuthClients guessing addresses) the one closest to its
// end.
func (l *authLimit) addLocked(key netip.Prefix, now time.Time) *authClient {
	if l.clients == nil {
		l.clients = make(map[netip.Prefix]*authClient)
	}
	if len(l.clients) >= maxAuthClients {
		for k, c := range l.clients {
			if !c.tat.After(now) {
				delete(l.clients, k)
			}
		}
	}
	if len(l.clients) >= maxAuthClients {
		var first netip.Prefix
		var firstTat time.Time
		for k, c := range l.clients {
			if firstTat.IsZero() || c.tat.Before(firstTat) {
				first, firstTat = k, c.tat
			}
		}
		delete(l.clients, first)
	}
	c := &authClient{}
	l.clients[key] = c
	return c
}

// size is how many clients are counted (read by tests).
func (l *authLimit) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// authBlocked is the answer to a wrong credential from a client past its
// limit.
func authBlocked(wait time.Duration) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, RetryAfter: wait,
		Message: "server: too many wrong tokens from this address in a short time; its wrong credentials are refused for " +
			strconv.FormatInt(retryAfterSeconds(wait), 10) + " s (the right token is still accepted)"}
}

// checkToken compares a credential from r's client: ok, or refused with
// the error to answer. The right credential is accepted before any count
// is read. A missing credential is refused without being counted;
// refused is nil for it, and for a wrong one under the limit, and the
// caller answers as it does for a missing one.
func (s *Server) checkToken(r *http.Request, presented bool, match func() bool) (ok bool, refused *apiError) {
	if !s.token.set {
		return true, nil
	}
	if !presented {
		return false, nil
	}
	if match() {
		return true, nil
	}
	key := authClientKey(r.RemoteAddr)
	if wait := s.authLimit.wait(key); wait > 0 {
		return false, authBlocked(wait)
	}
	if s.authLimit.failed(key) {
		client := "unknown"
		if key.IsValid() {
			client = key.String()
		}
		s.log.Warn("server: too many wrong tokens from one address; answering its wrong credentials with 429 for a while",
			"client", client, "for", s.authLimit.wait(key).Round(time.Second).String())
	}
	return false, nil
}
