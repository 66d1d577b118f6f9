package fleet

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestGobreakerNodesShareOneState: four nodes take turns on a host that
// cuts every connection, so every request is an error. No
// node alone sees more than two failures in a row, fewer than gobreaker's
// default six; the breaker opens after six in all only because the nodes
// share their state through the store.
func TestGobreakerNodesShareOneState(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	c := GobreakerNodesPolicy(4).New(Env{Timeout: time.Second, Base: base})
	var refusedAt int
	for i := 1; i <= 8 && refusedAt == 0; i++ {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
		resp, err := c.Do(req)
		switch {
		case errors.Is(err, ErrRefused):
			refusedAt = i
		case err == nil:
			resp.Body.Close()
			t.Fatalf("request %d answered; want a failure", i)
		}
	}
	if refusedAt != 7 {
		t.Fatalf("first refusal at request %d; want 7 (after six failures on four nodes)", refusedAt)
	}
}
