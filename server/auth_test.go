package server

import (
	"net/http"
	"strings"
	"testing"
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
