package server

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/guard"
)

func TestDestinationRefusal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"10.0.0.1", true},
		{"172.16.5.4", true},
		{"192.168.1.1", true},
		{"fd00::1", true},
		{"169.254.169.254", true},
		{"fe80::1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"100.64.0.1", true},
		{"255.255.255.255", true},
		{"93.184.216.34", false},
		{"2606:2800:220:1:248:1893:25c8:1946", false},
		{"172.32.0.1", false},
	}
	for _, c := range cases {
		got := destinationRefusal(netip.MustParseAddr(c.addr)) != ""
		if got != c.refused {
			t.Errorf("%s: refused=%v, want %v", c.addr, got, c.refused)
		}
	}
}

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
