package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/waitfor"
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
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(up.Close)
	pc := proxyClient(f.proxy)
	t.Cleanup(pc.CloseIdleConnections)
	if resp, err := pc.Get(up.URL); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}

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
		`hostguard_http_request_duration_seconds_count{code="200",method="GET",route="/v1/items/{id}"} 1`,
		`hostguard_http_request_duration_seconds_count{code="200",method="POST",route="/v1/hosts/{name}/touch"} 2`,
		// /v1/fetch and the proxy have histograms of their own.
		`hostguard_fetch_request_duration_seconds_count{code="502",method="GET"} 2`,
		`hostguard_proxy_request_duration_seconds_count{code="200",method="GET"} 1`,
		`hostguard_build_info{go_version="` + runtime.Version() + `",version="devel"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, `route="/v1/fetch"`) {
		t.Error("/v1/fetch is timed in the API histogram")
	}
	// Labels never carry endpoints, host names or item ids.
	for _, leak := range []string{dead.Addr(), "up.example", "secret-item"} {
		if strings.Contains(text, leak) {
			t.Errorf("metrics carry %q", leak)
		}
	}
}

// proxyClient sends every request through the daemon's proxy at addr.
func proxyClient(addr string) *http.Client {
	u := &url.URL{Scheme: "http", Host: addr}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
}

// TestFeedMetricsTellSuccessFromFailure: a working feed moves its last
// success and its admissions (the leader's own, counted like the API's);
// a dead one moves its failure counter and never its last success.
func TestFeedMetricsTellSuccessFromFailure(t *testing.T) {
	t.Parallel()
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	x, _ := newFakeIndexer(t, testAPIKey, 3)
	f := setup(t, func(c *Config) {
		c.Feeds = []Feed{
			{Name: "good", URL: x.URL(), APIKey: testAPIKey},
			{Name: "dead", URL: dead.URL() + "/api", APIKey: testAPIKey},
		}
	})
	f.waitSynced("good")
	waitfor.True(t, 10*time.Second, "the dead feed never failed", func() bool {
		_, v, _ := f.feedNamed("dead")
		return v.LastError != ""
	})
	text := string(f.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		`hostguard_feed_failures_total{feed="dead"} 1`,
		`hostguard_feed_failures_total{feed="good"} 0`,
		`hostguard_feed_last_success_timestamp_seconds{feed="dead"} 0`,
		`hostguard_budget_admissions_total{kind="head_poll",result="granted"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, `hostguard_feed_last_success_timestamp_seconds{feed="good"} 0`) {
		t.Error("the working feed has no last success")
	}
}

// TestHalfOpenMeansATrialCanRun: an endpoint whose trial is out is
// counted as "trial", not "half-open".
func TestHalfOpenMeansATrialCanRun(t *testing.T) {
	for _, c := range []struct {
		e    guard.EndpointStatus
		want string
	}{
		{guard.EndpointStatus{State: guard.HalfOpen}, "half-open"},
		{guard.EndpointStatus{State: guard.HalfOpen, TrialOut: true}, "trial"},
		{guard.EndpointStatus{State: guard.HalfOpen, TrialOut: true, Probing: true}, "trial"},
		{guard.EndpointStatus{State: guard.Open}, "open"},
		{guard.EndpointStatus{State: guard.Closed}, "closed"},
	} {
		if got := endpointState(c.e); got != c.want {
			t.Errorf("endpointState(%+v) = %q, want %q", c.e, got, c.want)
		}
	}
}
