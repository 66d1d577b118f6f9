package storeerr_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/storeerr"
	"github.com/hostguard/hostguard/internal/tcprelay"
	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// relayed returns dsn pointed at a relay in front of its server.
func relayed(t *testing.T, dsn string) (*tcprelay.Relay, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tcprelay.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	u.Host = r.Addr()
	return r, u.String()
}

// TestLostPostgresConnection cuts the network under a statement in flight,
// connects while it stays cut, and uses a closed pool: each of pgx's
// errors for a connection that is gone must read as an outage.
func TestLostPostgresConnection(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	relay, through := relayed(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, through)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	watch, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()

	done := make(chan error, 1)
	go func() {
		_, err := pool.Exec(ctx, "SELECT pg_sleep(30) /* lostconn */")
		done <- err
	}()
	waitfor.True(t, 20*time.Second, "the statement runs on the server", func() bool {
		var n int
		_ = watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%/* lostconn */' AND pid <> pg_backend_pid()`).Scan(&n)
		return n == 1
	})
	relay.Set(tcprelay.Cut)
	err = <-done
	t.Logf("cut in flight: %v", err)
	if !storeerr.Unavailable(err) {
		t.Errorf("a statement whose connection was cut: %v (%T) is not an outage", err, err)
	}
	_, err = pool.Exec(ctx, "SELECT 1")
	t.Logf("cut at connect: %v", err)
	if !storeerr.Unavailable(err) {
		t.Errorf("connecting while the network is cut: %v is not an outage", err)
	}
	pool.Close()
	_, err = pool.Exec(ctx, "SELECT 1")
	if !storeerr.Unavailable(err) {
		t.Errorf("a closed pool: %v is not an outage", err)
	}
}
