package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/tcprelay"
	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
)

// relayedPostgres serves a fixture whose PostgreSQL store is reached
// through a relay the test can cut or black-hole.
func relayedPostgres(t *testing.T, pc postgres.Config, opts ...func(*Config)) (*fixture, *tcprelay.Relay) {
	t.Helper()
	u, err := url.Parse(storetest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	relay, err := tcprelay.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	u.Host = relay.Addr()
	st, err := postgres.OpenConfig(context.Background(), u.String(), pc)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, st, newFakeClock(), opts...), relay
}

// TestLostStoreConnectionIsAnOutage cuts the network under a request
// whose statement is on its way to PostgreSQL: the driver sees its
// connection end without a word, and the answer is a 503 to come back
// from, as for any outage, until the network is back.
func TestLostStoreConnectionIsAnOutage(t *testing.T) {
	t.Parallel()
	f, relay := relayedPostgres(t, postgres.Config{Timeout: -1})
	f.do("POST", "/v1/items", `{"items":[{"id":"before"}]}`)

	relay.Set(tcprelay.BlackHole)
	before := relay.Dropped()
	got := make(chan answer, 1)
	go func() { got <- f.do("POST", "/v1/items", `{"items":[{"id":"lost"}]}`) }()
	waitfor.True(t, 10*time.Second, "the statement is in flight", func() bool { return relay.Dropped() > before })
	relay.Set(tcprelay.Cut)
	a := <-got
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Fatalf("a request whose connection was cut: %d %v %s; want 503 with Retry-After", a.status, a.header, a.body)
	}
	if a := f.do("POST", "/v1/items", `{"items":[{"id":"cut"}]}`); a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Fatalf("a request while the network is cut: %d %s; want 503 with Retry-After", a.status, a.body)
	}

	relay.Set(tcprelay.Pass)
	waitfor.True(t, 10*time.Second, "the store is back", func() bool {
		return f.do("POST", "/v1/items", `{"items":[{"id":"after"}]}`).status == http.StatusOK
	})
}

// TestInternalErrorsAreLoggedBesideAnOutage: an outage's 503s are logged
// at most once per errorLogEvery, and a 500 among them still is.
func TestInternalErrorsAreLoggedBesideAnOutage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	answer := func(err error) int {
		w := httptest.NewRecorder()
		f.s.writeError(w, httptest.NewRequest("POST", "/v1/items", nil), err)
		return w.Code
	}
	for range 5 {
		if code := answer(failed("adding items", context.DeadlineExceeded)); code != http.StatusServiceUnavailable {
			t.Fatalf("an outage answered %d", code)
		}
	}
	if code := answer(failed("settling an item", errors.New("a bug"))); code != http.StatusInternalServerError {
		t.Fatalf("a bug answered %d", code)
	}
	logs := f.logs.String()
	if n := strings.Count(logs, "server: adding items failed"); n != 1 {
		t.Errorf("5 outage answers logged %d lines, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, "server: settling an item failed") {
		t.Errorf("the 500 beside the outage was not logged:\n%s", logs)
	}
}
