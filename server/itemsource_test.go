package server

import (
	"net/http"
	"strings"
	"testing"
)

// The clients offer a source on fail, settle and both observe routes; the
// daemon must take it there (the library keeps it among the item's
// sources) and refuse a bad one without changing the item.
func TestItemsTakeASource(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "s1"}, {"id": "s2"}}})
	type sourced struct {
		State   string `json:"state"`
		Sources []struct {
			Source string `json:"source"`
			Class  string `json:"class"`
		} `json:"sources"`
	}
	sources := func(id string) (string, []string) {
		var it sourced
		decodeInto(t, f.do("GET", itemPath(id, ""), nil), &it)
		var out []string
		for _, s := range it.Sources {
			out = append(out, s.Source+"/"+s.Class)
		}
		return it.State, out
	}

	leases := f.claim(t, 2, 30)
	if len(leases) != 2 {
		t.Fatalf("claim: %+v", leases)
	}
	// A bad source refuses the call and leaves the lease as it was.
	bad := f.do("POST", itemPath(leases[0].ID, "fail"), map[string]any{"lease": leases[0].Lease, "class": "timeout", "source": "tracker\nforged"})
	if bad.status != http.StatusBadRequest || !strings.Contains(string(bad.body), "source") {
		t.Fatalf("a source with a newline: %d %s, want 400 naming source", bad.status, bad.body)
	}
	if st, _ := sources(leases[0].ID); st != "leased" {
		t.Fatalf("a refused fail changed the item: %s", st)
	}
	if r := f.do("POST", itemPath(leases[0].ID, "fail"), map[string]any{"lease": leases[0].Lease, "class": "timeout", "source": "tracker-a"}); r.status != http.StatusOK {
		t.Fatalf("fail with a source: %d %s", r.status, r.body)
	}
	var settled struct {
		Results []struct {
			OK bool `json:"ok"`
		} `json:"results"`
	}
	decodeInto(t, f.do("POST", "/v1/items/settle", map[string]any{"outcomes": []map[string]any{
		{"id": leases[1].ID, "lease": leases[1].Lease, "op": "fail", "class": "timeout", "source": "tracker-b"},
	}}), &settled)
	if len(settled.Results) != 1 || !settled.Results[0].OK {
		t.Fatalf("settle with a source: %+v", settled)
	}
	if r := f.do("POST", itemPath(leases[0].ID, "observe"), map[string]any{"source": "dht-1"}); r.status != http.StatusOK {
		t.Fatalf("observe with a source: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/v1/items/observe", map[string]any{"ids": []string{leases[1].ID}, "source": "dht-2"}); r.status != http.StatusOK {
		t.Fatalf("batch observe with a source: %d %s", r.status, r.body)
	}
	for id, want := range map[string]string{leases[0].ID: "tracker-a/timeout dht-1/", leases[1].ID: "tracker-b/timeout dht-2/"} {
		if _, got := sources(id); strings.Join(got, " ") != want {
			t.Errorf("%s's sources = %q, want %q", id, got, want)
		}
	}
	// A source belongs with a failure only.
	expectError(t, f.do("POST", "/v1/items/settle", map[string]any{"outcomes": []map[string]any{
		{"id": "s1", "lease": "x", "op": "succeed", "source": "tracker-a"},
	}}), http.StatusBadRequest, "outcomes[0].class")
}
