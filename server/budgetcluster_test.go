package server

import (
	"context"
	"net/http"
	"testing"

	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
)

// TestBudgetSettingsAreClusterWide runs two nodes on one PostgreSQL: a
// pause, a new source and a removal sent to one node apply to the other's
// next admission, and a node started later begins with them.
func TestBudgetSettingsAreClusterWide(t *testing.T) {
	t.Parallel()
	dsn := storetest.PostgresDSN(t)
	node := func() *fixture {
		st, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		return serveOn(t, st, newFakeClock())
	}
	a, b := node(), node()
	paused := func(f *fixture) bool {
		var rep struct {
			Paused bool `json:"paused"`
		}
		decodeInto(t, f.do("GET", "/v1/budget", nil), &rep)
		return rep.Paused
	}

	if st := b.admitStatus("unpaced"); st != http.StatusOK {
		t.Fatalf("B before the pause: %d", st)
	}
	if r := a.do("POST", "/v1/budget/pause", map[string]any{"paused": true}); r.status != http.StatusOK {
		t.Fatalf("pause on A: %d %s", r.status, r.body)
	}
	expectError(t, b.do("POST", "/v1/budget/admit", map[string]any{"source": "unpaced", "kind": "head_poll"}), http.StatusServiceUnavailable, "")
	if !paused(b) {
		t.Fatal("B's GET /v1/budget does not say paused after A paused")
	}
	// A node started now begins paused: the pause is durable.
	if c := node(); !paused(c) || c.admitStatus("unpaced") != http.StatusServiceUnavailable {
		t.Fatal("a node started after the pause is not paused")
	}
	if r := b.do("POST", "/v1/budget/pause", map[string]any{"paused": false}); r.status != http.StatusOK {
		t.Fatalf("resume on B: %d %s", r.status, r.body)
	}
	if st := a.admitStatus("unpaced"); st != http.StatusOK {
		t.Fatalf("A after B resumed: %d", st)
	}

	// A source added on A is admitted on B; removed on B, A no longer
	// knows it.
	if r := a.do("PUT", "/v1/budget/sources/live", map[string]any{"pace_seconds": 0}); r.status != http.StatusCreated {
		t.Fatalf("PUT on A: %d %s", r.status, r.body)
	}
	if r := b.do("PUT", "/v1/budget/sources/live", map[string]any{"pace_seconds": 0, "share": "gentle"}); r.status != http.StatusOK {
		t.Fatalf("PUT of the same source on B: %d %s; want 200 (it exists)", r.status, r.body)
	}
	if st := b.admitStatus("live"); st != http.StatusOK {
		t.Fatalf("B after A added the source: %d", st)
	}
	if r := b.do("DELETE", "/v1/budget/sources/live", nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE on B: %d %s", r.status, r.body)
	}
	expectError(t, a.do("POST", "/v1/budget/admit", map[string]any{"source": "live", "kind": "head_poll"}), http.StatusNotFound, "source")
	// A source of the daemon's configuration with nothing set at run time
	// cannot be deleted over the API.
	expectError(t, a.do("DELETE", "/v1/budget/sources/indexer", nil), http.StatusConflict, "name")
}
