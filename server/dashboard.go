package server

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/hostguard/hostguard/api"
)

// dashboardRefreshEvery is how often the dashboard reloads its figures.
const dashboardRefreshEvery = 5 * time.Second

// The dashboard is one page with its style and script inline, so it loads
// nothing from anywhere: the Content-Security-Policy allows exactly that
// style and script (by hash), requests to the daemon itself, and nothing
// else. The script fills the page from GET /v1/status and writes every
// figure and name with textContent, never as HTML: host names and
// endpoints come from clients.
var (
	//go:embed dashboard.html
	dashboardHTML string
	//go:embed dashboard.css
	dashboardCSS string
	//go:embed dashboard.js
	dashboardJS string
	//go:embed login.html
	loginHTML string
)

type page struct {
	head, tail string // around the place for the page's data
	csp        string
}

var (
	dashboardPage = newPage(dashboardHTML, true)
	loginPage     = newPage(loginHTML, false)
)

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

func newPage(src string, script bool) page {
	src = strings.Replace(src, "{{style}}", dashboardCSS, 1)
	csp := "default-src 'none'; style-src " + cspHash(dashboardCSS) +
		"; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	if script {
		src = strings.Replace(src, "{{script}}", dashboardJS, 1)
		csp += "; script-src " + cspHash(dashboardJS) + "; connect-src 'self'"
	}
	head, tail, _ := strings.Cut(src, "{{data}}")
	return page{head: head, tail: tail, csp: csp}
}

func (p page) write(w http.ResponseWriter, status int, data string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// Not no-referrer: under it a browser sends Origin: null with the
	// login form, which the form's origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", p.csp)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(p.head + data + p.tail))
}

// dashboardData is what the page starts from: the report itself, so the
// first paint needs no request, and how the script should behave.
type dashboardData struct {
	RefreshMS int64 `json:"refresh_ms"`
	Session   bool  `json:"session"`
	// CSRF is the session's CSRF token, which the script sends with each
	// action; empty without a session.
	CSRF   string     `json:"csrf,omitempty"`
	Report api.Status `json:"report"`
}

// dashboard serves GET /. With a token, requireTokenOrSession has already
// answered a request without credentials with the login form.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) error {
	every := s.cfg.dashboardRefresh
	if every <= 0 {
		every = dashboardRefreshEvery
	}
	// encoding/json escapes <, > and &, so no name can end the script
	// element the data sits in.
	d := dashboardData{RefreshMS: every.Milliseconds(), Session: s.token.set, Report: s.statusReport(r.Context())}
	if c, err := r.Cookie(sessionCookie); err == nil && s.token.set && s.sessions.valid(c.Value) {
		d.CSRF = s.sessions.csrf(c.Value)
	}
	data, err := json.Marshal(d)
	if err != nil {
		return failed("rendering the dashboard", err)
	}
	dashboardPage.write(w, http.StatusOK, string(data))
	return nil
}

// writeLoginPage answers with the login form and message, if any.
func writeLoginPage(w http.ResponseWriter, status int, message string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="hostguard"`)
	msg := ""
	if message != "" {
		msg = `<p class="problem" role="alert">` + html.EscapeString(message) + `</p>`
	}
	loginPage.write(w, status, msg)
}
