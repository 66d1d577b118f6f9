package server

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/tcprelay"
	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/sqlite"
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

// TestStoreTimeoutWritesNothing stalls a request's statement half way: its
// item row is inserted, and the trigger that counts it waits on a table
// lock the test holds. Past the timeout the answer is 503; the statement
// stays whole: the server may finish it once the lock is gone (the client
// can no longer stop it), but never writes the item without its count.
func TestStoreTimeoutWritesNothing(t *testing.T) {
	t.Parallel()
	dsn := storetest.PostgresDSN(t)
	st, err := postgres.OpenConfig(context.Background(), dsn, postgres.Config{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f := serveOn(t, st, newFakeClock())
	if a := f.do("POST", "/v1/items", `{"items":[{"id":"before"}]}`); a.status != http.StatusOK {
		t.Fatalf("adding: %d %s", a.status, a.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE retry_counts IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	a := f.do("POST", "/v1/items", `{"items":[{"id":"stalled"}]}`)
	// The server does not know yet that the client gave up: the
	// statement still waits behind the lock.
	var stalled []int32
	if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(pid), '{}') FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))`).Scan(&stalled); err != nil {
		t.Fatal(err)
	}
	tx.Rollback(ctx)
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Fatalf("a request stalled on a lock: %d %s; want 503 with Retry-After", a.status, a.body)
	}
	waitfor.True(t, 10*time.Second, "the stalled statement ends", func() bool {
		var n int
		_ = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY ($1) AND state = 'active'`, stalled).Scan(&n)
		return n == 0
	})
	var items, counted int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM retry_items), (SELECT coalesce(sum(n), 0) FROM retry_counts)`).Scan(&items, &counted); err != nil {
		t.Fatal(err)
	}
	if items != counted {
		t.Fatalf("%d items, %d counted: the stalled statement was written in half", items, counted)
	}
}

// TestStoreTimeoutOnABusySQLiteFile: while another process holds the
// SQLite file's write lock, a request that writes is answered 503 with
// Retry-After once the store's timeout has passed (SQLite's own busy
// timeout was 10 s), and its item is not there once the lock is gone.
func TestStoreTimeoutOnABusySQLiteFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hostguard.db")
	const timeout = 300 * time.Millisecond
	st, err := sqlite.OpenConfig(ctx, path, sqlite.Config{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := serveOn(t, st, newFakeClock())
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a := f.do("POST", "/v1/items", `{"items":[{"id":"held"}]}`)
	took := time.Since(start)
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Fatalf("a write behind another process's lock: %d %v %s; want 503 with Retry-After", a.status, a.header, a.body)
	}
	if took > timeout+3*time.Second {
		t.Fatalf("answered after %v; want about the store's timeout, %v", took, timeout)
	}
	if a := f.do("GET", "/v1/items/held", nil); a.status != http.StatusNotFound {
		t.Fatalf("the item whose write timed out: %d %s; want 404", a.status, a.body)
	}
}
