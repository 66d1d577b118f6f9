package client

import (
	"net/http"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
)

// TestCodeFollowsTheOtherClients checks the answers the daemon tests
// cannot easily make: each row is a status, a route and a body, and the
// code the Python and TypeScript clients give the same answer.
func TestCodeFollowsTheOtherClients(t *testing.T) {
	for _, c := range []struct {
		status int
		rt     route
		body   api.ErrorBody
		want   Code
	}{
		{http.StatusTooManyRequests, routeAcquire, api.ErrorBody{}, CodeTooManyTickets},
		{http.StatusTooManyRequests, routePlain, api.ErrorBody{}, CodeOther},
		{http.StatusTooManyRequests, routeBudget, api.ErrorBody{Reason: "paced"}, CodeBudgetPaced},
		{http.StatusTooManyRequests, routeBudget, api.ErrorBody{}, CodeBudgetPaced},
		{http.StatusTooManyRequests, routeBudget, api.ErrorBody{Reason: "exhausted"}, CodeBudgetExhausted},
		{http.StatusForbidden, routeBudget, api.ErrorBody{Field: "kind"}, CodeBudgetDisabled},
		{http.StatusServiceUnavailable, routeBudget, api.ErrorBody{Reason: "paused"}, CodeBudgetPaused},
		// A store outage on an admission is not a pause.
		{http.StatusServiceUnavailable, routeBudget, api.ErrorBody{}, CodeOther},
		{http.StatusServiceUnavailable, routePlain, api.ErrorBody{Endpoint: "https://a.example"}, CodeFastFail},
		{http.StatusBadGateway, routePlain, api.ErrorBody{FastFail: true}, CodeFastFail},
		{http.StatusConflict, routeLease, api.ErrorBody{Field: "lease"}, CodeLeaseLost},
		{http.StatusConflict, routeLease, api.ErrorBody{Field: "id"}, CodeConflict},
		{http.StatusConflict, routePlain, api.ErrorBody{Field: "lease"}, CodeConflict},
		{http.StatusRequestEntityTooLarge, routePlain, api.ErrorBody{}, CodeTooLarge},
		{http.StatusNotImplemented, routePlain, api.ErrorBody{}, CodeNotConfigured},
		{http.StatusInternalServerError, routePlain, api.ErrorBody{}, CodeOther},
	} {
		if got := code(c.status, c.body, c.rt); got != c.want {
			t.Errorf("%d on route %d with %+v: %q, want %q", c.status, c.rt, c.body, got, c.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	secs := int64(7)
	for _, c := range []struct {
		header string
		body   *int64
		want   time.Duration
	}{
		{"3", nil, 3 * time.Second},
		{"3", &secs, 3 * time.Second},
		{"Sun, 01 Mar 2026 12:01:30 GMT", nil, 90 * time.Second},
		{"Sun, 01 Mar 2026 11:00:00 GMT", nil, 0},
		{"soon", &secs, 7 * time.Second},
		{"", nil, 0},
		{"-5", nil, 0},
	} {
		if got := retryAfter(c.header, c.body, now); got != c.want {
			t.Errorf("Retry-After %q (body %v): %v, want %v", c.header, c.body, got, c.want)
		}
	}
}

func TestDaemonError(t *testing.T) {
	for _, c := range []struct {
		fields []string
		want   string
	}{
		{[]string{`hostguard; error=destination_unavailable; details="endpoint a, b; c is down"`}, "destination_unavailable"},
		{[]string{`upstream-cache; error=x`, `hostguard;error="connection_timeout"`}, "connection_timeout"},
		{[]string{`upstream-cache; detail="hostguard; error=fake", other`}, ""},
		{[]string{`"hostguard"; ERROR=http_request_denied`}, "http_request_denied"},
		{[]string{`hostguard; received-status=503`}, ""},
		{nil, ""},
	} {
		if got := daemonError(c.fields); got != c.want {
			t.Errorf("Proxy-Status %q: %q, want %q", c.fields, got, c.want)
		}
	}
}
