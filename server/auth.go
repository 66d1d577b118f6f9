package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/hostguard/hostguard/server/internal/dashboard"
)

// CheckListen refuses an address that reaches beyond the loopback interface
// when token is empty: an unauthenticated guard and forward proxy on a
// shared network would let anyone reset endpoints, read the queue and use
// the host as an open proxy. Hostnames other than "localhost" count as
// beyond loopback, since what they resolve to can change.
func CheckListen(addr, token string) error {
	if token != "" || isLoopbackAddr(addr) {
		return nil
	}
	return fmt.Errorf("server: refusing to listen on %q beyond loopback without a token; set --token (or HOSTGUARD_TOKEN) or listen on 127.0.0.1", addr)
}

func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// tokenMatcher compares presented credentials with the configured token in
// constant time. Both sides are hashed first so that the comparison takes
// the same time whatever the presented length.
type tokenMatcher struct {
	sum [sha256.Size]byte
	set bool
}

func newTokenMatcher(token string) tokenMatcher {
	if token == "" {
		return tokenMatcher{}
	}
	return tokenMatcher{sum: sha256.Sum256([]byte(token)), set: true}
}

func (m tokenMatcher) equal(presented string) bool {
	got := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(got[:], m.sum[:]) == 1
}

// bearer reports whether an Authorization (or Proxy-Authorization) value
// carries the token. For the proxy, Basic credentials whose password is the
// token are accepted too, because that is what HTTPS_PROXY=http://u:TOKEN@…
// makes curl and most other clients send.
func (m tokenMatcher) allows(header string, basic bool) bool {
	if !m.set {
		return true
	}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok {
		return false
	}
	cred = strings.TrimSpace(cred)
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		return m.equal(cred)
	case basic && strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return false
		}
		_, pass, ok := strings.Cut(string(raw), ":")
		return ok && m.equal(pass)
	}
	return false
}

// requireToken wraps an API handler. It never says whether a token was
// missing or wrong, and never echoes what was presented.
func (s *Server) requireToken(next http.Handler) http.Handler {
	if !s.token.set {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.bearerAllows(w, r, false) {
			next.ServeHTTP(w, r)
		}
	})
}

// bearerAllows checks r's Authorization header under the guess limit,
// and answers r itself when it does not allow it: with the login form for
// the dashboard's page, JSON for the rest.
func (s *Server) bearerAllows(w http.ResponseWriter, r *http.Request, page bool) bool {
	auth := r.Header.Get("Authorization")
	ok, refused := s.checkToken(r, auth != "", func() bool { return s.token.allows(auth, false) })
	switch {
	case ok:
		return true
	case refused != nil && page:
		writeBlockedLoginPage(w, refused)
	case refused != nil:
		writeAPIError(w, refused)
	case page:
		dashboard.WriteLogin(w, http.StatusUnauthorized, "")
	default:
		w.Header().Set("WWW-Authenticate", `Bearer realm="hostguard"`)
		writeAPIError(w, &apiError{Status: http.StatusUnauthorized,
			Message: "server: missing or wrong bearer token (send Authorization: Bearer TOKEN)"})
	}
	return false
}
