package server

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

const loginToken = "s3cret-token-for-the-dashboard"

// loginAs posts the login form as the dashboard's own page does.
func (f *fixture) loginAs(token string, hdr ...string) answer {
	f.t.Helper()
	h := append([]string{"Content-Type", "application/x-www-form-urlencoded", "Origin", f.api}, hdr...)
	return f.do("POST", "/login", "token="+token, h...)
}

func sessionFrom(t *testing.T, a answer) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	return nil
}

func TestLoginExchangesTheTokenForASessionCookie(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = loginToken })

	// Without credentials the page is the login form; the API stays JSON.
	a := f.do("GET", "/", nil)
	if a.status != http.StatusUnauthorized || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(a.body), `action="/login"`) || !strings.Contains(string(a.body), `name="token"`) {
		t.Fatalf("GET / without a token: %d %s %s", a.status, a.header.Get("Content-Type"), a.body)
	}
	if strings.Contains(string(a.body), "hg-data") {
		t.Fatal("the login form carries the dashboard's figures")
	}
	expectError(t, f.do("GET", "/v1/status", nil), http.StatusUnauthorized, "")

	// A wrong token: the form again, no cookie.
	a = f.loginAs("not-the-token")
	if a.status != http.StatusUnauthorized || !strings.Contains(string(a.body), "not the token") || sessionFrom(t, a) != nil {
		t.Fatalf("wrong token: %d, cookie %v: %s", a.status, sessionFrom(t, a), a.body)
	}
	if a = f.loginAs(""); a.status != http.StatusUnauthorized || sessionFrom(t, a) != nil {
		t.Fatalf("empty token: %d", a.status)
	}

	a = f.loginAs(loginToken)
	c := sessionFrom(t, a)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/" || c == nil {
		t.Fatalf("login: %d Location %q cookie %v", a.status, a.header.Get("Location"), c)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || c.MaxAge <= 0 {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP, with a lifetime", c)
	}
	if strings.Contains(c.Value, loginToken) || len(c.Value) < 20 {
		t.Errorf("cookie value %q: want a random session id, never the token", c.Value)
	}
	if strings.Contains(f.logs.String(), loginToken) {
		t.Error("the token reached the log")
	}
	cookie := sessionCookie + "=" + c.Value

	a = f.do("GET", "/", nil, "Cookie", cookie)
	if a.status != http.StatusOK || !strings.Contains(string(a.body), `"session":true`) {
		t.Fatalf("GET / with the session: %d", a.status)
	}
	if a = f.do("GET", "/v1/status", nil, "Cookie", cookie, "Sec-Fetch-Site", "same-origin"); a.status != http.StatusOK {
		t.Fatalf("GET /v1/status with the session: %d %s", a.status, a.body)
	}
	// The bearer header keeps working, everywhere.
	bearer := "Bearer " + loginToken
	for _, p := range []string{"/", "/v1/status", "/v1/guard", "/metrics"} {
		if a = f.do("GET", p, nil, "Authorization", bearer); a.status != http.StatusOK {
			t.Errorf("GET %s with the bearer token: %d", p, a.status)
		}
	}
	// A wrong header is not rescued by a good cookie.
	expectError(t, f.do("GET", "/v1/status", nil, "Cookie", cookie, "Authorization", "Bearer wrong"), http.StatusUnauthorized, "")

	// Logging out ends the session on the daemon, not only in the browser.
	a = f.do("POST", "/logout", nil, "Cookie", cookie, "Origin", f.api)
	if a.status != http.StatusSeeOther || sessionFrom(t, a) == nil || sessionFrom(t, a).MaxAge >= 0 {
		t.Fatalf("logout: %d, cookie %v", a.status, sessionFrom(t, a))
	}
	expectError(t, f.do("GET", "/v1/status", nil, "Cookie", cookie), http.StatusUnauthorized, "")
	if f.s.sessions.Len() != 0 {
		t.Errorf("%d sessions left after logout", f.s.sessions.Len())
	}
}

// The cookie is sent by the browser on its own, so it must not be enough
// for anything but the dashboard's reads, whoever makes the browser send
// it; and the forms accept posts from the daemon's own page only.
func TestSessionCookieCannotChangeState(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = loginToken })
	c := sessionFrom(t, f.loginAs(loginToken))
	if c == nil {
		t.Fatal("no session")
	}
	cookie := sessionCookie + "=" + c.Value
	for _, tc := range []struct {
		method, path, body string
		hdr                []string
	}{
		{"POST", "/v1/guard/reset-all", "", nil},
		{"POST", "/v1/guard/reset-all", "", []string{"Origin", f.api, "Sec-Fetch-Site", "same-origin"}},
		{"POST", "/v1/guard/reset", `{"url":"https://x.example/"}`, []string{"Content-Type", "application/json", "Origin", f.api}},
		{"POST", "/v1/budget/pause", `{"paused":true}`, []string{"Content-Type", "application/json"}},
		{"GET", "/v1/guard", "", nil},
		{"GET", "/v1/fetch?url=http://127.0.0.1:9/", "", nil},
		{"GET", "/metrics", "", nil},
		// The dashboard's own read, but a page of another origin on the
		// same host made the browser send it.
		{"GET", "/v1/status", "", []string{"Sec-Fetch-Site", "same-site"}},
		{"GET", "/v1/status", "", []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		a := f.do(tc.method, tc.path, body, append([]string{"Cookie", cookie}, tc.hdr...)...)
		if a.status != http.StatusUnauthorized && a.status != http.StatusForbidden {
			t.Errorf("%s %s with only the cookie %v: %d %s; want 401 or 403", tc.method, tc.path, tc.hdr, a.status, a.body)
		}
	}
	if rep := f.do("GET", "/v1/budget", nil, "Authorization", "Bearer "+loginToken).json(t); rep["paused"] != false {
		t.Fatalf("the budget was paused: %v", rep)
	}

	// The login form, posted from elsewhere or by a script with no
	// Origin, is refused before the token is looked at.
	for _, hdr := range [][]string{
		{"Content-Type", "application/x-www-form-urlencoded"},
		{"Content-Type", "application/x-www-form-urlencoded", "Origin", "http://evil.example"},
		{"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "cross-site"},
	} {
		a := f.do("POST", "/login", "token="+loginToken, hdr...)
		if a.status != http.StatusForbidden || sessionFrom(t, a) != nil {
			t.Errorf("login with %v: %d, cookie %v; want 403 and none", hdr, a.status, sessionFrom(t, a))
		}
	}
	a := f.do("POST", "/logout", nil, "Cookie", cookie, "Origin", "http://evil.example")
	if a.status != http.StatusForbidden {
		t.Errorf("cross-origin logout: %d", a.status)
	}
	if a = f.do("GET", "/v1/status", nil, "Cookie", cookie); a.status != http.StatusOK {
		t.Errorf("the session did not survive a refused logout: %d", a.status)
	}
}

func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = loginToken })
	c := sessionFrom(t, f.loginAs(loginToken))
	cookie := sessionCookie + "=" + c.Value
	f.clock.Advance(sessionLifetime - time.Second)
	if a := f.do("GET", "/v1/status", nil, "Cookie", cookie); a.status != http.StatusOK {
		t.Fatalf("before expiry: %d", a.status)
	}
	f.clock.Advance(time.Second)
	if a := f.do("GET", "/", nil, "Cookie", cookie); a.status != http.StatusUnauthorized || !strings.Contains(string(a.body), `action="/login"`) {
		t.Fatalf("after expiry: %d", a.status)
	}
}

func TestLoginWithoutATokenGoesToTheDashboard(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.loginAs("anything")
	if a.status != http.StatusSeeOther || sessionFrom(t, a) != nil {
		t.Fatalf("login without a token configured: %d, cookie %v", a.status, sessionFrom(t, a))
	}
	if a = f.do("GET", "/", nil); a.status != http.StatusOK || !strings.Contains(string(a.body), `"session":false`) {
		t.Fatalf("GET /: %d", a.status)
	}
}
