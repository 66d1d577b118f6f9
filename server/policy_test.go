package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/guard"
)

// TestFetchPolicyRefusesPrivateDestinations never sends a packet beyond
// loopback: refused addresses are stopped in the dialer's Control hook,
// before connect(2).
func TestFetchPolicyRefusesPrivateDestinations(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.AllowPrivate = false })
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {})
	port := up.URL[strings.LastIndex(up.URL, ":"):]
	targets := []string{
		up.URL + "/",                    // 127.0.0.1, a live server
		"http://localhost" + port + "/", // a name that resolves to loopback
		"http://[::1]" + port + "/",
		"http://10.0.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://0.0.0.0" + port + "/",
		"http://192.168.0.1:8080/",
	}
	for _, target := range targets {
		for range 3 { // more than the guard's threshold
			a := f.do("GET", fetchPath(target), nil)
			expectError(t, a, http.StatusForbidden, "")
			if a.json(t)["class"] != "policy" {
				t.Fatalf("%s: class %v, want policy", target, a.json(t)["class"])
			}
		}
		// A refusal is inconclusive: the endpoint stays closed.
		if st := f.s.guard.State(target); st != guard.Closed {
			t.Fatalf("%s: policy refusals moved the endpoint to %v", target, st)
		}
	}
	rec.mu.Lock()
	n := len(rec.reqs)
	rec.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d requests reached the loopback server despite the policy", n)
	}
}

func TestFetchAllowPrivateReachesLoopback(t *testing.T) {
	t.Parallel()
	f := setup(t) // AllowPrivate is true in setup
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) })
	if a := f.do("GET", fetchPath(up.URL+"/"), nil); a.status != 200 || string(a.body) != "hi" {
		t.Fatalf("with AllowPrivate: %d %q", a.status, a.body)
	}
}
