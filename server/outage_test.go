package server

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/retry/retrydriver"
	"github.com/hostguard/hostguard/store/sqlite"
)

// TestStoreOutageIs503 closes the store under a running daemon: a request
// that needs it is an outage to wait out, not a bug.
func TestStoreOutageIs503(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if a := f.do("GET", "/v1/items/stats", nil); a.status != http.StatusOK {
		t.Fatalf("stats before the outage: %d %s", a.status, a.body)
	}
	f.store.Close()
	for range 3 {
		a := f.do("GET", "/v1/items/stats", nil)
		expectError(t, a, http.StatusServiceUnavailable, "")
		if a.header.Get("Retry-After") == "" || !strings.Contains(a.header.Get("Proxy-Status"), "proxy_internal_error") {
			t.Fatalf("outage answer headers %v; want Retry-After and Proxy-Status proxy_internal_error", a.header)
		}
		if strings.Contains(string(a.body), "sql") || strings.Contains(string(a.body), ".db") {
			t.Fatalf("the answer %s carries the store's own text", a.body)
		}
	}
	if n := strings.Count(f.logs.String(), "reading queue statistics failed"); n != 1 {
		t.Fatalf("%d log lines for three failures in a row, want 1 (then a count):\n%s", n, f.logs.String())
	}
}

// buggyStore fails the queue's statistics with an error no store returns
// for an outage: a stand-in for a bug.
type buggyStore struct{ *sqlite.Store }

var errBug = errors.New("stats: unexpected row shape")

func (buggyStore) RetryStats(context.Context, retrydriver.StatsParams) (retrydriver.StatsResult, error) {
	return retrydriver.StatsResult{}, errBug
}

// TestInternalBugIs500 answers an unrecognised failure 500, without
// Retry-After: waiting would not change it.
func TestInternalBugIs500(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hostguard.db"))
	if err != nil {
		t.Fatal(err)
	}
	f := serveOn(t, buggyStore{st}, newFakeClock())
	for range 2 {
		a := f.do("GET", "/v1/items/stats", nil)
		expectError(t, a, http.StatusInternalServerError, "")
		if a.header.Get("Retry-After") != "" {
			t.Fatalf("a bug answered with Retry-After %q", a.header.Get("Retry-After"))
		}
		if strings.Contains(string(a.body), errBug.Error()) {
			t.Fatalf("the answer %s carries the internal error's text", a.body)
		}
	}
	if n := strings.Count(f.logs.String(), "reading queue statistics failed"); n != 1 {
		t.Fatalf("%d log lines for two failures in a row, want 1:\n%s", n, f.logs.String())
	}
	if a := f.do("GET", "/v1/hosts", nil); a.status != http.StatusOK {
		t.Fatalf("another route after the bug: %d %s", a.status, a.body)
	}
}
