package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/internal/faulthost"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	for range 3 {
		f.do("GET", fetchPath(dead.URL()+"/"), nil)
	}
	f.do("POST", "/v1/hosts/up.example/touch", map[string]any{"ok": true})
	f.do("POST", "/v1/hosts/down.example/touch", map[string]any{"ok": false})
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "secret-item-1"}, {"id": "secret-item-2"}}})
	f.claim(t, 1, 30)
	f.do("GET", itemPath("secret-item-1", ""), nil)

	a := f.do("GET", "/metrics", nil)
	if a.status != http.StatusOK {
		t.Fatalf("/metrics: %d", a.status)
	}
	text := string(a.body)
	for _, want := range []string{
		`hostguard_guard_transitions_total{from="closed",to="open"} 1`,
		`hostguard_guard_fast_fails_total{via="fetch"} 1`,
		`hostguard_guard_endpoints{state="open"} 1`,
		`hostguard_upstream_requests_total{result="refused",via="fetch"} 2`,
		`hostguard_health_hosts{view="known"} 2`,
		`hostguard_health_hosts{view="unhealthy"} 1`,
		`hostguard_retry_items{state="pending"} 1`,
		`hostguard_retry_items{state="leased"} 1`,
		`hostguard_retry_items{state="done"} 0`,
		`hostguard_http_request_duration_seconds_count{code="200",route="GET /v1/items/{id}"} 1`,
		`hostguard_http_request_duration_seconds_count{code="200",route="POST /v1/hosts/{name}/touch"} 2`,
		"go_goroutines",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Labels never carry endpoints, host names or item ids.
	for _, leak := range []string{dead.Addr(), "up.example", "secret-item"} {
		if strings.Contains(text, leak) {
			t.Errorf("metrics carry %q", leak)
		}
	}
}
