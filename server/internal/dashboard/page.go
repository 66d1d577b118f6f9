package dashboard

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html"
	"net/http"
	"strings"
)

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

// Page is one of the daemon's HTML pages, with its style (and script)
// inline and its Content-Security-Policy.
type Page struct {
	head, tail string // around the place for the page's data
	csp        string
}

// The pages: Main is the dashboard, Login the form that asks for the
// token.
var (
	Main  = newPage(dashboardHTML, true)
	Login = newPage(loginHTML, false)
)

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

func newPage(src string, script bool) Page {
	src = strings.Replace(src, "{{style}}", dashboardCSS, 1)
	csp := "default-src 'none'; style-src " + cspHash(dashboardCSS) +
		"; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	if script {
		src = strings.Replace(src, "{{script}}", dashboardJS, 1)
		csp += "; script-src " + cspHash(dashboardJS) + "; connect-src 'self'"
	}
	head, tail, _ := strings.Cut(src, "{{data}}")
	return Page{head: head, tail: tail, csp: csp}
}

// Write answers with the page, data in the place the page keeps for it:
// the dashboard's JSON, or the login form's message as HTML.
func (p Page) Write(w http.ResponseWriter, status int, data string) {
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

// WriteLogin answers with the login form and message, if any.
func WriteLogin(w http.ResponseWriter, status int, message string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="hostguard"`)
	msg := ""
	if message != "" {
		msg = `<p class="problem" role="alert">` + html.EscapeString(message) + `</p>`
	}
	Login.Write(w, status, msg)
}
