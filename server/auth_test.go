package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCheckListen(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:7411", "", true},
		{"127.1.2.3:0", "", true},
		{"[::1]:7411", "", true},
		{"localhost:7411", "", true},
		{":7411", "", false},
		{"0.0.0.0:7411", "", false},
		{"[::]:7411", "", false},
		{"192.168.1.5:7411", "", false},
		{"myhost.lan:7411", "", false},
		{"not an address", "", false},
		{":7411", "tok", true},
		{"0.0.0.0:7411", "tok", true},
	}
	for _, c := range cases {
		if err := CheckListen(c.addr, c.token); (err == nil) != c.ok {
			t.Errorf("CheckListen(%q, token=%v) = %v, want ok=%v", c.addr, c.token != "", err, c.ok)
		}
	}
}

func TestTokenRequiredEverywhereButHealthz(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = "correct horse" })
	if a := f.do("GET", "/healthz", nil); a.status != 200 {
		t.Fatalf("/healthz without a token: %d", a.status)
	}
	for _, path := range []string{"/", "/metrics", "/v1/status", "/v1/guard", "/v1/hosts", "/v1/items/stats", "/v1/no-such-route"} {
		// Four wrong tokens per path: past the guess limit by the end,
		// unless its allowances come back (TestWrongTokensAreLimited).
		f.clock.Advance(authBurst * authRefill)
		for _, auth := range []string{"", "Bearer wrong", "Bearer correct horse!", "Basic Y29ycmVjdCBob3JzZQ==", "correct horse"} {
			var hdr []string
			if auth != "" {
				hdr = []string{"Authorization", auth}
			}
			a := f.do("GET", path, nil, hdr...)
			if path == "/" {
				// A browser opening the dashboard gets the login form.
				if a.status != http.StatusUnauthorized || !strings.Contains(string(a.body), `action="/login"`) {
					t.Fatalf("GET / with %q: %d %s", auth, a.status, a.body)
				}
			} else {
				expectError(t, a, http.StatusUnauthorized, "")
			}
			if a.header.Get("WWW-Authenticate") == "" {
				t.Fatalf("%s: 401 without WWW-Authenticate", path)
			}
		}
		a := f.do("GET", path, nil, "Authorization", "Bearer correct horse")
		if a.status == http.StatusUnauthorized {
			t.Fatalf("%s with the right token: 401", path)
		}
	}
	if a := f.do("GET", "/v1/guard", nil, "Authorization", "bearer correct horse"); a.status != 200 {
		t.Fatalf("the scheme name is case-insensitive, got %d", a.status)
	}
}

// TestWrongTokensAreLimited: past authBurst wrong credentials from one
// client, its wrong credentials are refused with 429 until an allowance
// comes back, on the API, the login form and the proxy; the right token
// is accepted all along, from that client too (it used to be refused
// during a block, which let any client lock every other out). A request
// without credentials guesses nothing and still gets its 401.
func TestWrongTokensAreLimited(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = loginToken })
	wrong := []string{"Authorization", "Bearer not-the-token"}
	right := []string{"Authorization", "Bearer " + loginToken}
	for i := range authBurst {
		if a := f.do("GET", "/v1/guard", nil, wrong...); a.status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i+1, a.status)
		}
	}
	a := f.do("GET", "/v1/guard", nil, wrong...)
	expectError(t, a, http.StatusTooManyRequests, "")
	if got, want := a.header.Get("Retry-After"), strconv.Itoa(int(authRefill/time.Second)); got != want {
		t.Fatalf("Retry-After %q, want %q", got, want)
	}
	if a := f.do("GET", "/v1/guard", nil, right...); a.status != http.StatusOK {
		t.Fatalf("right token during the block: %d, want 200", a.status)
	}
	if a := f.do("GET", "/v1/guard", nil); a.status != http.StatusUnauthorized {
		t.Fatalf("no token during the block: %d, want 401", a.status)
	}
	if a := f.loginAs("not-the-token"); a.status != http.StatusTooManyRequests || sessionFrom(t, a) != nil ||
		!strings.Contains(string(a.body), "Too many wrong tokens") {
		t.Fatalf("login with a wrong token during the block: %d %s", a.status, a.body)
	}
	if a := f.loginAs(loginToken); a.status != http.StatusSeeOther || sessionFrom(t, a) == nil {
		t.Fatalf("login with the right token during the block: %d %s", a.status, a.body)
	}
	c, br := f.rawProxyConn(t)
	fmt.Fprintf(c, "GET http://127.0.0.1:9/x HTTP/1.1\r\nHost: 127.0.0.1:9\r\nProxy-Authorization: Bearer wrong\r\n\r\n")
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(resp.Header.Get("Proxy-Status"), "http_request_denied") {
		t.Fatalf("proxy with a wrong token during the block: %d, Proxy-Status %q", resp.StatusCode, resp.Header.Get("Proxy-Status"))
	}

	// One allowance back per refill: the next wrong one is a 401 again
	// and starts the next block.
	f.clock.Advance(authRefill)
	if a := f.do("GET", "/v1/guard", nil, wrong...); a.status != http.StatusUnauthorized {
		t.Fatalf("the allowance that came back: %d, want 401", a.status)
	}
	if a := f.do("GET", "/v1/guard", nil, wrong...); a.status != http.StatusTooManyRequests {
		t.Fatalf("wrong token after the allowance was used: %d, want 429", a.status)
	}
	logs := f.logs.String()
	if strings.Count(logs, "too many wrong tokens") != 2 || strings.Contains(logs, loginToken) || strings.Contains(logs, "not-the-token") ||
		!strings.Contains(logs, "client=127.0.0.1/32") {
		t.Fatalf("want the two blocks logged with the client, never a token:\n%s", logs)
	}
}
