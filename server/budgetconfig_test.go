package server

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/budget"
)

// admitStatus asks for one head poll of source and returns the status.
func (f *fixture) admitStatus(source string) int {
	f.t.Helper()
	return f.do("POST", "/v1/budget/admit", map[string]any{"source": source, "kind": "head_poll"}).status
}

func TestBudgetLiveConfigurationAppliesToTheNextAdmission(t *testing.T) {
	t.Parallel()
	f := setup(t)

	expectError(t, f.do("POST", "/v1/budget/admit", map[string]any{"source": "live", "kind": "head_poll"}), http.StatusNotFound, "source")

	// Gentle: 5 % of 20 is one request a day; no pacing.
	var v api.SourceConfig
	a := f.do("PUT", "/v1/budget/sources/live", map[string]any{"owner_daily_limit": 20, "share": "gentle", "pace_seconds": 0})
	if a.status != http.StatusCreated {
		t.Fatalf("PUT a new source: %d %s", a.status, a.body)
	}
	if err := jsonUnmarshal(a.body, &v); err != nil || !v.Created || v.Share != "gentle" || v.PaceSeconds != 0 || *v.OwnerDailyLimit != 20 {
		t.Fatalf("PUT answer: %+v (%v)", v, err)
	}
	if st := f.admitStatus("live"); st != 200 {
		t.Fatalf("first admission after PUT: %d", st)
	}
	if st := f.admitStatus("live"); st != http.StatusTooManyRequests {
		t.Fatalf("second admission of a one-a-day source: %d", st)
	}

	// Unlimited with no reserve: all 20, of which one is used.
	decodeInto(t, f.do("PUT", "/v1/budget/sources/live", map[string]any{"owner_daily_limit": 20, "share": "unlimited", "reserve_percent": 0, "pace_seconds": 0}), &v)
	if v.Created || v.Share != "unlimited" {
		t.Fatalf("PUT over an existing source: %+v", v)
	}
	if st := f.admitStatus("live"); st != 200 {
		t.Fatalf("admission after raising the share: %d", st)
	}

	// Pause stops all background work at once; resume restarts it.
	var p api.PauseResult
	decodeInto(t, f.do("POST", "/v1/budget/pause", map[string]any{"paused": true}), &p)
	if !p.Paused {
		t.Fatalf("pause answer: %+v", p)
	}
	paused := f.do("POST", "/v1/budget/admit", map[string]any{"source": "live", "kind": "head_poll"})
	expectError(t, paused, http.StatusServiceUnavailable, "")
	if m := paused.json(t); m["reason"] != "paused" {
		t.Fatalf("paused refusal %s: want reason paused", paused.body)
	}
	var rep struct {
		Paused bool `json:"paused"`
	}
	decodeInto(t, f.do("GET", "/v1/budget", nil), &rep)
	if !rep.Paused {
		t.Fatal("GET /v1/budget does not say paused")
	}
	decodeInto(t, f.do("POST", "/v1/budget/pause", map[string]any{"paused": false}), &p)
	if st := f.admitStatus("live"); st != 200 {
		t.Fatalf("admission after resume: %d", st)
	}

	// Removal: the next admission no longer knows the source.
	if a := f.do("DELETE", "/v1/budget/sources/live", nil); a.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", a.status, a.body)
	}
	expectError(t, f.do("POST", "/v1/budget/admit", map[string]any{"source": "live", "kind": "head_poll"}), http.StatusNotFound, "source")
	expectError(t, f.do("DELETE", "/v1/budget/sources/live", nil), http.StatusNotFound, "name")
}

func TestBudgetPutKeepsTheReportedLimit(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if err := f.s.cfg.Budget.ReportLimit(context.Background(), "unpaced", 500); err != nil {
		t.Fatal(err)
	}
	var v api.SourceConfig
	decodeInto(t, f.do("PUT", "/v1/budget/sources/unpaced", map[string]any{}), &v)
	if v.ReportedDailyLimit == nil || *v.ReportedDailyLimit != 500 || v.OwnerDailyLimit != nil || v.PaceSeconds != 3 {
		t.Fatalf("PUT with no fields: %+v", v)
	}
	var rep struct {
		Sources []struct {
			Name       string `json:"name"`
			DailyLimit int64  `json:"daily_limit"`
			LimitFrom  string `json:"limit_from"`
			Allowance  int64  `json:"allowance"`
		} `json:"sources"`
	}
	decodeInto(t, f.do("GET", "/v1/budget", nil), &rep)
	for _, s := range rep.Sources {
		if s.Name == "unpaced" && (s.DailyLimit != 500 || s.LimitFrom != "reported" || s.Allowance != 50) {
			t.Fatalf("after PUT without a reported limit: %+v", s)
		}
	}
	decodeInto(t, f.do("PUT", "/v1/budget/sources/unpaced", map[string]any{"reported_daily_limit": 0}), &v)
	if v.ReportedDailyLimit != nil {
		t.Fatalf("a reported 0 should clear the figure: %+v", v)
	}
}

func TestBudgetLiveConfigurationBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	before := f.s.cfg.Budget.Sources()
	cases := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"unknown share", "PUT", "/v1/budget/sources/x", `{"share":"greedy"}`, 400, "share"},
		{"negative owner limit", "PUT", "/v1/budget/sources/x", `{"owner_daily_limit":-1}`, 400, "owner_daily_limit"},
		{"negative reported limit", "PUT", "/v1/budget/sources/x", `{"reported_daily_limit":-1}`, 400, "reported_daily_limit"},
		{"reserve over 100", "PUT", "/v1/budget/sources/x", `{"share":"unlimited","reserve_percent":101}`, 400, "reserve_percent"},
		{"negative pace", "PUT", "/v1/budget/sources/x", `{"pace_seconds":-1}`, 400, "pace_seconds"},
		{"pace over a day", "PUT", "/v1/budget/sources/x", `{"pace_seconds":90000}`, 400, "pace_seconds"},
		{"name with space", "PUT", "/v1/budget/sources/%20x", `{}`, 400, "name"},
		{"name with control", "PUT", "/v1/budget/sources/a%07b", `{}`, 400, "name"},
		{"limit as a string", "PUT", "/v1/budget/sources/x", `{"owner_daily_limit":"10"}`, 400, "owner_daily_limit"},
		{"unknown field", "PUT", "/v1/budget/sources/x", `{"limit":10}`, 400, "limit"},
		{"replace with bad share", "PUT", "/v1/budget/sources/indexer", `{"owner_daily_limit":5,"share":"lots"}`, 400, "share"},
		{"pause without paused", "POST", "/v1/budget/pause", `{}`, 400, "paused"},
		{"pause as a string", "POST", "/v1/budget/pause", `{"paused":"yes"}`, 400, "paused"},
		{"pause empty body", "POST", "/v1/budget/pause", ``, 400, ""},
		{"remove unknown", "DELETE", "/v1/budget/sources/nowhere", nil, 404, "name"},
		{"source pause without paused", "POST", "/v1/budget/sources/indexer/pause", `{}`, 400, "paused"},
		{"source pause as a string", "POST", "/v1/budget/sources/indexer/pause", `{"paused":"yes"}`, 400, "paused"},
		{"source pause unknown field", "POST", "/v1/budget/sources/indexer/pause", `{"paused":true,"all":true}`, 400, "all"},
		{"source pause empty body", "POST", "/v1/budget/sources/indexer/pause", ``, 400, ""},
		{"source pause unknown source", "POST", "/v1/budget/sources/nowhere/pause", `{"paused":true}`, 404, "name"},
		{"source pause name with space", "POST", "/v1/budget/sources/%20indexer/pause", `{"paused":true}`, 400, "name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, f.do(c.method, c.path, c.body), c.status, c.field)
		})
	}
	if after := f.s.cfg.Budget.Sources(); !reflect.DeepEqual(before, after) {
		t.Fatalf("bad requests changed the sources:\nbefore %+v\nafter  %+v", before, after)
	}
	if f.s.cfg.Budget.Paused() || f.s.cfg.Budget.SourcePaused("indexer") {
		t.Fatal("a bad pause request paused the budget or a source")
	}
	// The untouched source still admits.
	if _, err := f.s.cfg.Budget.Admit(context.Background(), admitHeadPoll("indexer")); err != nil {
		t.Fatalf("indexer after bad requests: %v", err)
	}
}

func admitHeadPoll(source string) budget.AdmitParams {
	return budget.AdmitParams{Source: source, Kind: budget.KindHeadPoll}
}

// TestBudgetPauseSource pauses one source through the API: its background
// admissions answer 503 "paused", another source's go on, the budget's
// report says so, and the log names the source and who acted.
func TestBudgetPauseSource(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var v api.SourcePauseResult
	decodeInto(t, f.do("POST", "/v1/budget/sources/indexer/pause", map[string]any{"paused": true}), &v)
	if v != (api.SourcePauseResult{Name: "indexer", Paused: true}) {
		t.Fatalf("pause answer %+v", v)
	}
	a := f.do("POST", "/v1/budget/admit", map[string]any{"source": "indexer", "kind": "head_poll"})
	if a.status != http.StatusServiceUnavailable || !strings.Contains(string(a.body), `"reason":"paused"`) {
		t.Fatalf("admission on the paused source: %d %s; want 503 paused", a.status, a.body)
	}
	var rep struct {
		Paused  bool `json:"paused"`
		Sources []struct {
			Name   string `json:"name"`
			Paused bool   `json:"paused"`
		} `json:"sources"`
	}
	decodeInto(t, f.do("GET", "/v1/budget", nil), &rep)
	paused := map[string]bool{}
	for _, s := range rep.Sources {
		paused[s.Name] = s.Paused
	}
	if rep.Paused || !paused["indexer"] || len(paused) < 2 {
		t.Fatalf("report after pausing indexer: %+v", rep)
	}
	for n, p := range paused {
		if n != "indexer" && p {
			t.Fatalf("source %q shows as paused", n)
		}
		if n != "indexer" {
			if _, err := f.s.cfg.Budget.Admit(context.Background(), admitHeadPoll(n)); err != nil {
				t.Fatalf("source %q while indexer is paused: %v", n, err)
			}
		}
	}
	decodeInto(t, f.do("POST", "/v1/budget/sources/indexer/pause", map[string]any{"paused": false}), &v)
	if v.Paused {
		t.Fatalf("resume answer %+v", v)
	}
	if _, err := f.s.cfg.Budget.Admit(context.Background(), admitHeadPoll("indexer")); err != nil {
		t.Fatalf("indexer after resuming: %v", err)
	}
	logs := f.logs.String()
	for _, want := range []string{`route="POST /v1/budget/sources/{name}/pause" by="no token" status=200 name=indexer`,
		`source=indexer paused=true`, `source=indexer paused=false`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
}
