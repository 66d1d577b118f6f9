package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
)

// TestActionRoutes calls the routes added for the dashboard's actions
// with the token: each success and documented error, and the log line
// naming who acted.
func TestActionRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = loginToken })
	bearer := []string{"Authorization", "Bearer " + loginToken}

	// A host in backoff, reset: the tracker forgets it.
	f.do("POST", "/v1/hosts/ok.example/touch", map[string]any{"ok": true}, bearer...)
	for range 3 {
		f.do("POST", "/v1/hosts/down.example/touch", map[string]any{"ok": false}, bearer...)
	}
	var hr api.HostReset
	decodeInto(t, f.do("POST", "/v1/hosts/down.example/reset", nil, bearer...), &hr)
	if !hr.Reset || hr.Name != "down.example" {
		t.Fatalf("host reset: %+v", hr)
	}
	expectError(t, f.do("GET", "/v1/hosts/down.example", nil, bearer...), http.StatusNotFound, "name")
	decodeInto(t, f.do("POST", "/v1/hosts/down.example/reset", nil, bearer...), &hr)
	if hr.Reset {
		t.Fatalf("a second reset of the host: %+v; want reset false", hr)
	}
	expectError(t, f.do("POST", "/v1/hosts/bad%20name/reset", nil, bearer...), http.StatusBadRequest, "name")
	expectError(t, f.do("POST", "/v1/hosts/a.example/reset", nil), http.StatusUnauthorized, "")

	// An item waiting out a failure, made due now, then forgotten.
	later := f.clock.Now().Add(time.Hour)
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "w1", "not_before": later}}}, bearer...)
	var due struct {
		ID     string    `json:"id"`
		State  string    `json:"state"`
		NextAt time.Time `json:"next_at"`
		Moved  bool      `json:"moved"`
	}
	decodeInto(t, f.do("POST", "/v1/items/w1/due-now", nil, bearer...), &due)
	if !due.Moved || !due.NextAt.Equal(f.clock.Now()) || due.State != "pending" {
		t.Fatalf("due-now: %+v; want moved to %v", due, f.clock.Now())
	}
	var stats struct {
		DueNow int `json:"due_now"`
	}
	decodeInto(t, f.do("GET", "/v1/items/stats", nil, bearer...), &stats)
	if stats.DueNow != 1 {
		t.Fatalf("after due-now, %d items are due; want 1", stats.DueNow)
	}
	expectError(t, f.do("POST", "/v1/items/nope/due-now", nil, bearer...), http.StatusNotFound, "id")
	expectError(t, f.do("POST", "/v1/items/w1/due-now", map[string]any{"x": 1}, bearer...), http.StatusBadRequest, "x")
	if a := f.do("DELETE", "/v1/items/w1", nil, bearer...); a.status != http.StatusNoContent {
		t.Fatalf("forget: %d %s", a.status, a.body)
	}
	expectError(t, f.do("GET", "/v1/items/w1", nil, bearer...), http.StatusNotFound, "id")
	expectError(t, f.do("DELETE", "/v1/items/w1", nil, bearer...), http.StatusNotFound, "id")

	logs := f.logs.String()
	for _, want := range []string{`route="POST /v1/hosts/{name}/reset" by=token status=200 name=down.example`,
		`route="POST /v1/items/{id}/due-now" by=token status=200 id=w1`, `route="DELETE /v1/items/{id}" by=token status=204 id=w1`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, loginToken) {
		t.Error("the token reached the log")
	}
}

// TestActionsNeedTheSessionsCSRFToken: with a session, an action needs
// the CSRF token the dashboard's page carries; the cookie alone, a wrong
// token, another session's token or a request from another port change
// nothing.
func TestActionsNeedTheSessionsCSRFToken(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = loginToken })
	bearer := []string{"Authorization", "Bearer " + loginToken}
	login := func() (cookie, csrf string) {
		t.Helper()
		c := sessionFrom(t, f.loginAs(loginToken))
		if c == nil {
			t.Fatal("no session")
		}
		cookie = sessionCookie + "=" + c.Value
		page := f.do("GET", "/", nil, "Cookie", cookie)
		_, data, _ := strings.Cut(string(page.body), `<script type="application/json" id="hg-data">`)
		data, _, _ = strings.Cut(data, "</script>")
		var d dashboardData
		if err := json.Unmarshal([]byte(data), &d); err != nil || len(d.CSRF) < 32 {
			t.Fatalf("the page's CSRF token: %q (%v)", d.CSRF, err)
		}
		if strings.Contains(d.CSRF, c.Value) {
			t.Fatal("the CSRF token holds the session id")
		}
		return cookie, d.CSRF
	}
	cookie, csrf := login()
	_, otherCSRF := login()

	f.do("POST", "/v1/budget/pause", map[string]any{"paused": false}, bearer...)
	paused := func() bool {
		var rep statusReport
		decodeInto(t, f.do("GET", "/v1/status", nil, bearer...), &rep)
		return rep.Budget.Paused
	}
	json := []string{"Content-Type", "application/json"}
	tries := []struct {
		what string
		hdr  []string
	}{
		{"the cookie alone", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-origin"}},
		{"a wrong token", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-origin", csrfHeader, strings.Repeat("0", len(csrf))}},
		{"another session's token", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-origin", csrfHeader, otherCSRF}},
		{"the token without the cookie", []string{"Sec-Fetch-Site", "same-origin", csrfHeader, csrf}},
		{"another port", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-site", csrfHeader, csrf}},
		{"a navigation", []string{"Cookie", cookie, "Sec-Fetch-Site", "none", csrfHeader, csrf}},
	}
	for _, try := range tries {
		a := f.do("POST", "/v1/budget/pause", map[string]any{"paused": true}, append(try.hdr, json...)...)
		if a.status != http.StatusUnauthorized && a.status != http.StatusForbidden {
			t.Errorf("%s: %d %s; want 401 or 403", try.what, a.status, a.body)
		}
		if paused() {
			t.Fatalf("%s paused the budget", try.what)
		}
	}
	a := f.do("POST", "/v1/budget/pause", map[string]any{"paused": true},
		append([]string{"Cookie", cookie, "Sec-Fetch-Site", "same-origin", csrfHeader, csrf}, json...)...)
	if a.status != http.StatusOK || !paused() {
		t.Fatalf("the session with its token: %d %s; want the budget paused", a.status, a.body)
	}
	// The session's token does not make the cookie a credential for the
	// routes that are not actions.
	if a := f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "x"}}},
		append([]string{"Cookie", cookie, "Sec-Fetch-Site", "same-origin", csrfHeader, csrf}, json...)...); a.status != http.StatusUnauthorized {
		t.Errorf("adding an item with the session: %d; want 401", a.status)
	}
	logs := f.logs.String()
	_, id, _ := strings.Cut(cookie, "=")
	if !strings.Contains(logs, `route="POST /v1/budget/pause" by="session `) || strings.Contains(logs, id) || strings.Contains(logs, csrf) {
		t.Errorf("the log should name the session without its id or token:\n%s", logs)
	}
}
