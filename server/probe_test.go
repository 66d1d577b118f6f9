package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/waitfor"
)

// tripByReports opens u's endpoint with two failed reports and has one
// acquire refused during the open period, which is the demand that makes
// the guard probe when the period ends.
func tripByReports(t *testing.T, f *fixture, u string) {
	t.Helper()
	for range 2 {
		a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)
		f.do("POST", "/v1/guard/report", map[string]any{"ticket": a["ticket"], "outcome": "failed", "error_class": "refused"})
	}
	expectError(t, f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}), http.StatusServiceUnavailable, "")
}

// probeCount reads hostguard_guard_probes_total{result} from /metrics.
func probeCount(t *testing.T, f *fixture, result string) string {
	t.Helper()
	line := `hostguard_guard_probes_total{result="` + result + `"} `
	for l := range strings.SplitSeq(string(f.do("GET", "/metrics", nil).body), "\n") {
		if v, ok := strings.CutPrefix(l, line); ok {
			return v
		}
	}
	return "absent"
}

func TestGuardProbes(t *testing.T) {
	t.Parallel()
	t.Run("an answered probe closes the endpoint", func(t *testing.T) {
		t.Parallel()
		h := faulthost.Status(http.StatusNotFound)
		t.Cleanup(h.Close)
		f := setup(t) // AllowPrivate: the host is on 127.0.0.1
		u := h.URL() + "/feed?apikey=secret"
		tripByReports(t, f, u)
		f.clock.Advance(30 * time.Second)
		// The guard probes; callers are refused meanwhile.
		expectError(t, f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}), http.StatusServiceUnavailable, "")
		waitfor.True(t, 10*time.Second, "the probe to answer", func() bool { return f.s.Guard().State(u).String() == "closed" })
		if got := probeCount(t, f, probeAnswered); got != "1" {
			t.Errorf("answered probes %s, want 1", got)
		}
		if got := h.Requests(); got != 1 {
			t.Errorf("host saw %d requests, want the one probe", got)
		}
		if a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}); a.status != http.StatusOK {
			t.Fatalf("acquire after the probe answered: %d %s", a.status, a.body)
		}
	})
	t.Run("a probe the destination policy refuses is inconclusive", func(t *testing.T) {
		t.Parallel()
		h := faulthost.Status(http.StatusOK)
		t.Cleanup(h.Close)
		f := setup(t, func(c *Config) { c.AllowPrivate = false })
		u := h.URL() + "/feed"
		tripByReports(t, f, u)
		f.clock.Advance(30 * time.Second)
		expectError(t, f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}), http.StatusServiceUnavailable, "")
		waitfor.True(t, 10*time.Second, "the probe to be refused", func() bool { return probeCount(t, f, probeInconclusive) == "1" })
		if got := h.Requests(); got != 0 {
			t.Errorf("host on loopback saw %d requests despite the policy", got)
		}
		// The slot is free again: the next acquire is an ordinary trial.
		if trial := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t); trial["trial"] != true {
			t.Fatalf("after an inconclusive probe: %v", trial)
		}
	})
}
