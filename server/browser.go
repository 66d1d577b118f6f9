package server

import (
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// The API listens on loopback without a token by default, so any web page
// the user opens could otherwise drive it: a cross-site form or fetch
// reaches 127.0.0.1 like any other address, and DNS rebinding lets a page
// read the answers under a name of its own. browserGuard closes both:
//
//   - the Host header must name the daemon: a loopback name or address,
//     the listen address (any of the host's addresses when the API listens
//     on all of them) or a name in Config.AllowedHosts. A rebound name is
//     none of these.
//   - a request that a browser marks as coming from another site (an
//     Origin that is not the daemon's own, or Sec-Fetch-Site: cross-site)
//     is refused before it is routed, whatever the method; so is
//     Sec-Fetch-Site: same-site (a page on another port of this host) on
//     a route that contacts hosts or changes state.
//   - a request that can change state and carries a body must say
//     Content-Type: application/json, which a cross-site page cannot send
//     without a CORS preflight that the daemon never grants.
//
// The status page is served to the browser's own navigation (same origin,
// Sec-Fetch-Site none or same-origin) and keeps working.
func (s *Server) browserGuard(next http.Handler) http.Handler {
	return s.apiHandler(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.checkHost(r.Host); err != nil {
			return err
		}
		if err := checkOrigin(r); err != nil {
			return err
		}
		if r.URL.Path == "/v1/fetch" {
			// The upstream's body and type are forwarded as they are, so
			// the type is the client's business; what comes back must not
			// run as a page of the API's origin.
			liftDeadlines(w)
			w = &sandboxed{ResponseWriter: w}
		} else if isFormRoute(r) {
			// The login and logout forms post a form body; they check
			// their origin themselves (checkFormOrigin).
		} else if err := checkContentType(r); err != nil {
			return err
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// checkHost accepts the names the daemon answers to.
func (s *Server) checkHost(host string) error {
	if host == "" {
		// HTTP/1.0 without Host: not a browser, which always sends one.
		return nil
	}
	if s.hostAllowed(host) {
		return nil
	}
	return &apiError{Status: http.StatusMisdirectedRequest, Field: "Host",
		Message: "server: this daemon does not answer to that Host; add the name to --allowed-hosts if it is yours"}
}

func (s *Server) hostAllowed(hostport string) bool {
	hostport = strings.ToLower(hostport)
	for _, a := range s.cfg.AllowedHosts {
		if a = strings.ToLower(a); a == hostport {
			return true
		}
	}
	name, _, err := net.SplitHostPort(hostport)
	if err != nil {
		name = strings.Trim(hostport, "[]")
	}
	name = strings.TrimSuffix(name, ".")
	for _, a := range s.cfg.AllowedHosts {
		if strings.EqualFold(strings.TrimSuffix(a, "."), name) {
			return true
		}
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761: these names never leave the host.
		return true
	}
	ip, err := netip.ParseAddr(name)
	if err != nil || ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	for _, l := range s.own.Listening() {
		if l.Addr() == ip || (l.Addr().IsUnspecified() && s.own.Has(ip)) {
			return true
		}
	}
	return false
}

// checkOrigin refuses what a browser says came from another site. Clients
// that are not browsers send neither header.
func checkOrigin(r *http.Request) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); {
	case strings.EqualFold(site, "cross-site"):
		return &apiError{Status: http.StatusForbidden, Field: "Origin",
			Message: "server: cross-site browser requests are refused"}
	case strings.EqualFold(site, "same-site") && contactsOrChanges(r):
		// A site is a host without its port: a page served on another
		// port of this host is same-site, and a GET form or link of its
		// own (which carries no Origin) would make the daemon fetch.
		return &apiError{Status: http.StatusForbidden, Field: "Origin",
			Message: "server: browser requests from another site or another port of this host may only read"}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Path == "" && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return &apiError{Status: http.StatusForbidden, Field: "Origin",
		Message: "server: requests from another origin are refused; the API serves its own status page only"}
}

// contactsOrChanges reports whether r may contact a host or change state:
// any method but a read, and the fetch route whatever its method.
func contactsOrChanges(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return r.URL.Path == "/v1/fetch"
	}
	return true
}

// checkContentType requires JSON on a request that may change state and
// has a body. A body-less POST (touch, succeed, pause) needs no type; a
// browser cannot send one cross-site without an Origin, which checkOrigin
// refuses.
func checkContentType(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	return &apiError{Status: http.StatusUnsupportedMediaType, Field: "Content-Type",
		Message: "server: a request body must be sent as Content-Type: application/json"}
}

// sandboxed adds the headers that keep a fetched answer from running as a
// page of the API's origin: whatever the upstream sent, a browser shows
// it sandboxed (no script, no same-origin access) and never sniffs it
// into HTML.
type sandboxed struct {
	http.ResponseWriter
	wrote bool
}

func (s *sandboxed) WriteHeader(code int) {
	if !s.wrote {
		s.wrote = true
		h := s.ResponseWriter.Header()
		h.Add("Content-Security-Policy", "sandbox")
		h.Set("X-Content-Type-Options", "nosniff")
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *sandboxed) Write(b []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (s *sandboxed) Unwrap() http.ResponseWriter { return s.ResponseWriter }
