package server

import (
	"context"
	"crypto/hmac"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/server/internal/dashboard"
)

// A browser cannot send a bearer header when it opens a page, so with a
// token the dashboard asks for it once (POST /login) and hands back a
// session cookie. The cookie holds a random id, never the token; the
// daemon keeps the ids (hashed) in memory, so a restart logs everyone out.
//
// The cookie is a weaker credential than the header, since the browser
// attaches it by itself, so it authenticates only the routes the
// dashboard reads (GET /, GET /v1/status, GET /v1/items and one item), which change
// nothing, and
// only when the browser says the request comes from the daemon's own
// origin or from the user (Sec-Fetch-Site same-origin or none). A page of
// another origin, even one on the same host, can make the browser send it
// to no other route: those want the header, which no page can make a
// browser add. SameSite=Strict keeps it off requests from other sites,
// and the browser guard refuses their Origin besides.
//
// The dashboard's actions (route.action) are the exception, and the
// cookie alone is never enough for them: each needs, besides, the
// session's CSRF token in the X-Hostguard-CSRF header. The token is an
// HMAC of the session id under a key the daemon draws at start, written
// into the dashboard's page for its script; a page of another origin can
// neither read it (the cookie is HttpOnly, the page is not readable
// across origins) nor add a header to a request it forges without a
// CORS preflight, which the daemon never grants.
const (
	sessionCookie = "hostguard_session"
	// maxSessions bounds the sessions held; a login beyond it ends the
	// one closest to expiry.
	maxSessions = 256
	// sessionLifetime is how long a login lasts; no activity extends it.
	sessionLifetime = 12 * time.Hour
	// csrfHeader carries the session's CSRF token on the dashboard's
	// actions.
	csrfHeader = "X-Hostguard-CSRF"
	// maxLoginBody bounds the login form.
	maxLoginBody = 4 << 10
)

// sessionAllows reports whether r carries a live session cookie on a
// request the cookie may authenticate: a read, from the daemon's own page
// or the user's own navigation; or, for an action, a request of the
// daemon's own page (not a navigation) that also carries the session's
// CSRF token. It returns the session's id.
func (s *Server) sessionAllows(r *http.Request, action bool) (string, bool) {
	site := strings.ToLower(r.Header.Get("Sec-Fetch-Site"))
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case read && (site == "" || site == "same-origin" || site == "none"):
	case !read && action && (site == "" || site == "same-origin"):
	default:
		return "", false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || !s.sessions.Valid(c.Value) {
		return "", false
	}
	if !read && !hmac.Equal([]byte(r.Header.Get(csrfHeader)), []byte(s.sessions.CSRF(c.Value))) {
		return "", false
	}
	return c.Value, true
}

// actorKey holds, in a request's context, who sent it: "token", a
// session's name, or "no token" on a daemon started without one.
type actorKey struct{}

func withActor(r *http.Request, who string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), actorKey{}, who))
}

// actor says who sent r, for the log of the dashboard's actions; never
// the token or the session id.
func actor(r *http.Request) string {
	if who, ok := r.Context().Value(actorKey{}).(string); ok {
		return who
	}
	return "no token"
}

// requireTokenOrSession is requireToken for the routes the dashboard
// reads or acts through: a session cookie does as well as the header (for
// an action, with its CSRF token). For the page itself, a request with
// neither gets the login form.
func (s *Server) requireTokenOrSession(next http.Handler, page, action bool) http.Handler {
	if !s.token.set {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A wrong header is not rescued by a good cookie.
		if r.Header.Get("Authorization") == "" {
			if id, ok := s.sessionAllows(r, action); ok {
				next.ServeHTTP(w, withActor(r, dashboard.SessionName(id)))
				return
			}
		}
		if s.bearerAllows(w, r, page) {
			next.ServeHTTP(w, withActor(r, "token"))
		}
	})
}

// checkFormOrigin accepts a form post only from a page of the daemon's
// own origin. browserGuard has already refused another Origin; this also
// refuses a post that names none, so a login or logout can only come from
// the login form or the dashboard.
func checkFormOrigin(r *http.Request) error {
	if r.Header.Get("Origin") != "" || strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "same-origin") {
		return nil
	}
	return &apiError{Status: http.StatusForbidden, Field: "Origin",
		Message: "server: log in and out from the dashboard's own page; API clients send Authorization: Bearer TOKEN instead"}
}

// isFormRoute reports whether r is one of the form posts the dashboard
// sends, which carry a form body rather than JSON.
func isFormRoute(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == "/login" || r.URL.Path == "/logout")
}

// login exchanges the token, sent as the form field "token", for a session
// cookie. A wrong or missing token shows the form again with 401; the
// answer never says which, and the token is never logged.
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	if err := checkFormOrigin(r); err != nil {
		return err
	}
	if !s.token.set {
		// Nothing to log in to: the dashboard is open.
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	token := ""
	if err := r.ParseForm(); err == nil {
		token = r.PostForm.Get("token")
	}
	ok, refused := s.checkToken(r, token != "", func() bool { return s.token.equal(token) })
	if refused != nil {
		writeBlockedLoginPage(w, refused)
		return nil
	}
	if !ok {
		dashboard.WriteLogin(w, http.StatusUnauthorized, "That is not the token this daemon was started with. Try again.")
		return nil
	}
	id, exp := s.sessions.Create()
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/",
		Expires: exp, MaxAge: int(sessionLifetime / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

// writeBlockedLoginPage shows the form with the guess limit's block.
func writeBlockedLoginPage(w http.ResponseWriter, refused *apiError) {
	secs := strconv.FormatInt(retryAfterSeconds(refused.RetryAfter), 10)
	w.Header().Set("Retry-After", secs)
	dashboard.WriteLogin(w, refused.Status, "Too many wrong tokens were tried from this address in a short time, so a wrong one is refused for "+
		secs+" s. Check the token, wait, then try again.")
}

// logout ends the request's session, if any, and clears the cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := checkFormOrigin(r); err != nil {
		return err
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.Remove(c.Value)
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}
