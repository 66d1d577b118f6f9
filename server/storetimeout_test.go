package server

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/tcprelay"
	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestStoreTimeoutInABlackHole: while the network to PostgreSQL drops
// every packet, a request is answered 503 with Retry-After once the
// store's timeout has passed, not when TCP gives up; the item it would
// have added is not there once the network is back.
func TestStoreTimeoutInABlackHole(t *testing.T) {
	t.Parallel()
	f, relay := relayedPostgres(t, postgres.Config{Timeout: 500 * time.Millisecond})
	relay.Set(tcprelay.BlackHole)
	a := f.do("POST", "/v1/items", `{"items":[{"id":"holed"}]}`) // the client gives up after 10 s
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Fatalf("a request into a black hole: %d %v %s; want 503 with Retry-After", a.status, a.header, a.body)
	}
	relay.Set(tcprelay.Pass)
	waitfor.True(t, 10*time.Second, "the store is back", func() bool {
		return f.do("GET", "/v1/items/holed", nil).status == http.StatusNotFound
	})
}

// TestStoreTimeoutWritesNothing stalls a request's transaction on a row
// lock the test holds: past the timeout the answer is 503, and nothing of
// the transaction is written.
func TestStoreTimeoutWritesNothing(t *testing.T) {
	t.Parallel()
	dsn := storetest.PostgresDSN(t)
	st, err := postgres.OpenConfig(context.Background(), dsn, postgres.Config{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f := serveOn(t, st, newFakeClock())
	if a := f.do("POST", "/v1/items", `{"items":[{"id":"z-held"}]}`); a.status != http.StatusOK {
		t.Fatalf("adding: %d %s", a.status, a.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, _ := url.Parse(dsn)
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM retry_items WHERE id = 'z-held' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	a := f.do("POST", "/v1/items", `{"items":[{"id":"a-new"},{"id":"z-held","priority":5}]}`)
	tx.Rollback(ctx)
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Fatalf("a request stalled on a lock: %d %s; want 503 with Retry-After", a.status, a.body)
	}
	if a := f.do("GET", "/v1/items/a-new", nil); a.status != http.StatusNotFound {
		t.Fatalf("the stalled transaction's first item is there: %d %s", a.status, a.body)
	}
}
