package server

import (
	"net/http"
	"strings"
	"testing"
)

func TestHostsTouchGetList(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Outage protection needs a recent success of some host before a
	// failure counts.
	if a := f.do("POST", "/v1/hosts/Good.Example/touch", map[string]any{"ok": true}); a.status != 200 {
		t.Fatalf("touch ok: %d %s", a.status, a.body)
	}
	var res struct {
		Name             string  `json:"name"`
		Display          string  `json:"display"`
		ConsecutiveFails int     `json:"consecutive_fails"`
		Healthy          bool    `json:"healthy"`
		Available        bool    `json:"available"`
		Counted          bool    `json:"counted"`
		RetryIn          float64 `json:"retry_in_seconds"`
	}
	for i := 1; i <= 2; i++ {
		decodeInto(t, f.do("POST", "/v1/hosts/bad.example/touch", map[string]any{"ok": false}), &res)
		if !res.Counted || res.ConsecutiveFails != i || res.Healthy || res.Available {
			t.Fatalf("failure %d: %+v", i, res)
		}
	}
	if res.RetryIn != 10 {
		t.Fatalf("retry_in_seconds %v after two failures, want 10", res.RetryIn)
	}
	decodeInto(t, f.do("GET", "/v1/hosts/BAD.example", nil), &res)
	if res.Name != "bad.example" || res.ConsecutiveFails != 2 {
		t.Fatalf("get: %+v", res)
	}
	// A host without a record is a 404, not an invented healthy record.
	expectError(t, f.do("GET", "/v1/hosts/never-seen.example", nil), http.StatusNotFound, "name")

	var list struct {
		Hosts []struct {
			Name string `json:"name"`
		} `json:"hosts"`
		Next string `json:"next"`
	}
	names := func(view string) string {
		decodeInto(t, f.do("GET", "/v1/hosts?view="+view, nil), &list)
		var n []string
		for _, h := range list.Hosts {
			n = append(n, h.Name)
		}
		return strings.Join(n, ",")
	}
	for view, want := range map[string]string{
		"all": "bad.example,good.example", "healthy": "good.example", "available": "good.example",
		"backoff": "bad.example", "unhealthy": "bad.example",
	} {
		if got := names(view); got != want {
			t.Errorf("view %s: %q, want %q", view, got, want)
		}
	}
	f.clock.Advance(11 * 1e9)
	if got := names("available"); got != "bad.example,good.example" {
		t.Errorf("available after the backoff: %q", got)
	}
	if got := names("healthy"); got != "good.example" {
		t.Errorf("healthy after the backoff: %q (strict view needs a success)", got)
	}
	decodeInto(t, f.do("GET", "/v1/hosts?limit=1", nil), &list)
	if len(list.Hosts) != 1 || list.Next != "bad.example" {
		t.Fatalf("page 1: %+v", list)
	}
	decodeInto(t, f.do("GET", "/v1/hosts?limit=1&after="+list.Next, nil), &list)
	if len(list.Hosts) != 1 || list.Hosts[0].Name != "good.example" {
		t.Fatalf("page 2: %+v", list)
	}
}

func TestHostsBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	long := strings.Repeat("h", 300)
	cases := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"missing ok", "POST", "/v1/hosts/a.example/touch", `{}`, 400, "ok"},
		{"ok not bool", "POST", "/v1/hosts/a.example/touch", `{"ok":"yes"}`, 400, "ok"},
		{"unknown field", "POST", "/v1/hosts/a.example/touch", `{"ok":true,"why":"x"}`, 400, "why"},
		{"no body", "POST", "/v1/hosts/a.example/touch", ``, 400, ""},
		{"name too long", "POST", "/v1/hosts/" + long + "/touch", `{"ok":true}`, 400, "name"},
		{"name with query", "POST", "/v1/hosts/" + "http:%2F%2Fa%3Fkey=1" + "/touch", `{"ok":true}`, 400, "name"},
		{"blank name", "GET", "/v1/hosts/%20", nil, 400, "name"},
		{"bad view", "GET", "/v1/hosts?view=sideways", nil, 400, "view"},
		{"bad limit", "GET", "/v1/hosts?limit=0", nil, 400, "limit"},
		{"huge limit", "GET", "/v1/hosts?limit=100000", nil, 400, "limit"},
		{"unknown param", "GET", "/v1/hosts?veiw=all", nil, 400, "veiw"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, f.do(c.method, c.path, c.body), c.status, c.field)
		})
	}
	var list struct {
		Hosts []any `json:"hosts"`
	}
	decodeInto(t, f.do("GET", "/v1/hosts", nil), &list)
	if len(list.Hosts) != 0 {
		t.Fatalf("bad requests created %d host records", len(list.Hosts))
	}
}

func TestRoutesWithoutTrackerOrScheduler(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Health = nil; c.Retry = nil })
	expectError(t, f.do("GET", "/v1/hosts", nil), http.StatusNotImplemented, "")
	expectError(t, f.do("GET", "/v1/items/stats", nil), http.StatusNotImplemented, "")
	if a := f.do("GET", "/v1/status", nil); a.status != 200 {
		t.Fatalf("status without tracker: %d", a.status)
	}
}
