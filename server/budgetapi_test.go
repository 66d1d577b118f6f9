package server

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestBudgetAdmitPacesAndExhausts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var g struct {
		Source string `json:"source"`
		Kind   string `json:"kind"`
		Cost   int64  `json:"cost"`
	}
	decodeInto(t, f.do("POST", "/v1/budget/admit", map[string]any{"source": "indexer", "kind": "head_poll"}), &g)
	if g.Source != "indexer" || g.Kind != "head_poll" || g.Cost != 1 {
		t.Fatalf("grant: %+v", g)
	}
	a := f.do("POST", "/v1/budget/admit", map[string]any{"source": "indexer", "kind": "head_poll"})
	expectError(t, a, http.StatusTooManyRequests, "")
	if a.header.Get("Retry-After") != "3" {
		t.Fatalf("paced Retry-After %q, want 3", a.header.Get("Retry-After"))
	}
	if m := a.json(t); m["reason"] != "paced" || m["resets_at"] != nil {
		t.Fatalf("paced refusal %s: want reason paced and no resets_at", a.body)
	}
	f.clock.Advance(3 * time.Second)
	if a := f.do("POST", "/v1/budget/admit", map[string]any{"source": "indexer", "kind": "head_poll"}); a.status != 200 {
		t.Fatalf("after the pace: %d %s", a.status, a.body)
	}

	// 10 a day: the unpaced source runs out on the 11th.
	for i := range 10 {
		if a := f.do("POST", "/v1/budget/admit", map[string]any{"source": "unpaced", "kind": "head_poll"}); a.status != 200 {
			t.Fatalf("admission %d: %d %s", i+1, a.status, a.body)
		}
	}
	a = f.do("POST", "/v1/budget/admit", map[string]any{"source": "unpaced", "kind": "head_poll"})
	expectError(t, a, http.StatusTooManyRequests, "")
	// The fake clock is at noon UTC: the allowance resets in 12 hours.
	if ra := a.header.Get("Retry-After"); ra != "43197" {
		t.Fatalf("exhausted Retry-After %q, want the seconds to midnight", ra)
	}
	if m := a.json(t); m["reason"] != "exhausted" || m["resets_at"] != "2026-03-02T00:00:00Z" {
		t.Fatalf("exhausted refusal %s: want reason exhausted and resets_at the next UTC midnight", a.body)
	}

	var rep struct {
		Sources []struct {
			Name      string `json:"name"`
			Used      int64  `json:"used"`
			Allowance int64  `json:"allowance"`
			Remaining int64  `json:"remaining"`
		} `json:"sources"`
	}
	b := f.do("GET", "/v1/budget", nil)
	if !strings.Contains(string(b.body), `"pace_seconds":3`) || strings.Contains(string(b.body), `"pace":`) {
		t.Fatalf("durations in the budget report are not in seconds: %s", b.body)
	}
	decodeInto(t, b, &rep)
	got := map[string]int64{}
	for _, s := range rep.Sources {
		got[s.Name] = s.Used
	}
	if got["indexer"] != 2 || got["unpaced"] != 10 {
		t.Fatalf("report: %+v", rep)
	}
	m := string(f.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		`hostguard_budget_admissions_total{kind="head_poll",result="granted"} 12`,
		`hostguard_budget_admissions_total{kind="head_poll",result="paced"} 1`,
		`hostguard_budget_admissions_total{kind="head_poll",result="exhausted"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if rep := f.dashboardReport(); rep.Budget == nil || len(rep.Budget.Sources) != 2 || rep.Budget.Sources[1].Name != "unpaced" {
		t.Error("the status page does not show the budget's sources")
	}
}

func TestBudgetByteReservations(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var g struct {
		ID   string `json:"id"`
		Cost int64  `json:"cost"`
	}
	decodeInto(t, f.do("POST", "/v1/budget/admit", map[string]any{"kind": "bytes", "cost": 1 << 20}), &g)
	if g.ID == "" || g.Cost != 1<<20 {
		t.Fatalf("reservation: %+v", g)
	}
	settle := func(actual any) answer {
		return f.do("POST", "/v1/budget/grants/"+g.ID+"/settle", map[string]any{"actual": actual})
	}
	if a := settle(1000); a.status != 200 {
		t.Fatalf("settle: %d %s", a.status, a.body)
	}
	if a := settle(1000); a.status != 200 {
		t.Fatalf("the same settle again: %d %s", a.status, a.body)
	}
	expectError(t, settle(2000), http.StatusConflict, "actual")

	var rep struct {
		Kinds []struct {
			Kind string `json:"kind"`
			Used int64  `json:"used"`
		} `json:"kinds"`
	}
	decodeInto(t, f.do("GET", "/v1/budget", nil), &rep)
	for _, k := range rep.Kinds {
		if k.Kind == "bytes" && k.Used != 1000 {
			t.Fatalf("bytes used %d after settling at 1000", k.Used)
		}
	}
}

func TestBudgetBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var g struct {
		ID string `json:"id"`
	}
	decodeInto(t, f.do("POST", "/v1/budget/admit", map[string]any{"kind": "bytes", "cost": 10}), &g)
	other := []byte(g.ID)
	if other[len(other)-1] == '0' {
		other[len(other)-1] = '1'
	} else {
		other[len(other)-1] = '0'
	}
	cases := []struct {
		name, path string
		body       any
		status     int
		field      string
	}{
		{"no kind", "/v1/budget/admit", `{"source":"indexer"}`, 400, "kind"},
		{"unknown kind", "/v1/budget/admit", `{"kind":"crawl"}`, 400, "kind"},
		{"negative cost", "/v1/budget/admit", `{"kind":"validation","cost":-1}`, 400, "cost"},
		{"unknown source", "/v1/budget/admit", `{"source":"nowhere","kind":"head_poll"}`, 404, "source"},
		{"unknown field", "/v1/budget/admit", `{"kind":"search","sauce":"x"}`, 400, "sauce"},
		{"bad grant id", "/v1/budget/grants/not-an-id/settle", `{"actual":1}`, 400, "id"},
		{"unknown grant", "/v1/budget/grants/" + string(other) + "/settle", `{"actual":1}`, 404, "id"},
		{"no actual", "/v1/budget/grants/" + g.ID + "/settle", `{}`, 400, "actual"},
		{"negative actual", "/v1/budget/grants/" + g.ID + "/settle", `{"actual":-5}`, 400, "actual"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, f.do("POST", c.path, c.body), c.status, c.field)
		})
	}
	// The reservation is still open at its full cost.
	if a := f.do("POST", "/v1/budget/grants/"+g.ID+"/settle", map[string]any{"actual": 3}); a.status != 200 {
		t.Fatalf("settling after bad requests: %d %s", a.status, a.body)
	}
}
