package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The tests of this file set two writers against each other on real
// connections, stop one of them half-way (in an Apply callback, or behind
// a row lock held by the test) and let the other run into it. Where two
// writers take rows in different orders, PostgreSQL aborts one of them
// with 40P01 after deadlock_timeout (1 s by default); in the order every
// writer shares, one waits for the other and both succeed.

// sameShard leaves exactly two idle connections in s's pool, on one
// counter shard of retry_counts (pg_backend_pid() % 16, migration 0003),
// and holds every other connection of the pool until release is called
// (before s closes): the next two calls of s that run at once use that
// shard.
func sameShard(ctx context.Context, t *testing.T, s *postgres.Store) (release func()) {
	t.Helper()
	pool := s.Pool()
	max := int(pool.Config().MaxConns)
	byShard := map[int32]*pgxpool.Conn{}
	var pair []*pgxpool.Conn
	for tries := 0; pair == nil; tries++ {
		if tries == 200 {
			t.Fatalf("no two of %d connections shared a shard", tries)
		}
		if len(byShard) == max {
			// The pool is full: drop a connection to make room for a new one.
			for shard, c := range byShard {
				delete(byShard, shard)
				if err := c.Hijack().Close(ctx); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var pid int32
		if err := c.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if o, ok := byShard[pid%16]; ok {
			delete(byShard, pid%16)
			pair = []*pgxpool.Conn{o, c}
			continue
		}
		byShard[pid%16] = c
	}
	for _, c := range pair {
		c.Release()
	}
	return func() {
		for _, c := range byShard {
			c.Release()
		}
	}
}

// blockedBy returns the backends of the database that wait for a lock,
// each with the backends it waits for.
func blockedBy(ctx context.Context, t *testing.T, db *pgx.Conn) map[int32][]int32 {
	t.Helper()
	rows, err := db.Query(ctx, `SELECT pid, pg_blocking_pids(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32][]int32{}
	var pid int32
	var by []int32
	if _, err := pgx.ForEachRow(rows, []any{&pid, &by}, func() error {
		out[pid] = slices.Clone(by)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// TestRetryUpdateAddMissingLocksItemsBeforeCounters: an update that adds
// missing items takes the item rows it finds before the counter rows its
// insert changes, as every other writer does. Its insert used to take the
// counter rows first (the statement trigger of migration 0003) and its
// locking read the items after; against a writer on the same counter
// shard that held one of the items and wanted the counter row, PostgreSQL
// aborted one of the two.
func TestRetryUpdateAddMissingLocksItemsBeforeCounters(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	now := time.Now().UTC().Truncate(time.Microsecond)
	if _, err := s.RetryAdd(ctx, retry.StoreAddParams{Now: now, Items: []retry.NewItem{{ID: "x", NotBefore: now}}}); err != nil {
		t.Fatal(err)
	}
	defer sameShard(ctx, t, s)()

	// The writer holding an item: it locks x, and once let go makes it
	// scheduled, so that its statement trigger takes the shard's counter
	// row of pending items.
	holding, letGo := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		_, err := s.RetryUpdate(ctx, retry.StoreUpdateParams{Now: now, IDs: []string{"x"},
			Apply: func(_ int, r *retry.StoreRecord) (bool, error) {
				close(holding)
				<-letGo
				r.State, r.NextAt = retry.Scheduled, now.Add(time.Hour)
				return true, nil
			}})
		held <- err
	}()
	select {
	case <-holding:
	case err := <-held:
		t.Fatalf("the holding update ended early: %v", err)
	}
	// The adding update: y is new (a pending item: the same counter row),
	// x is held.
	added := make(chan error, 1)
	go func() {
		res, err := s.RetryUpdate(ctx, retry.StoreUpdateParams{Now: now, IDs: []string{"x", "y"},
			AddMissing: &retry.NewItem{},
			Apply:      func(int, *retry.StoreRecord) (bool, error) { return false, nil }})
		if err == nil {
			err = errors.Join(res.Errs...)
		}
		added <- err
	}()
	waitfor.True(t, 10*time.Second, "the adding update waits for x", func() bool {
		return len(blockedBy(ctx, t, db)) > 0
	})
	close(letGo)
	errHeld, errAdded := <-held, <-added
	if isDeadlock(errHeld) || isDeadlock(errAdded) {
		t.Fatalf("deadlock: holding update: %v; adding update: %v", errHeld, errAdded)
	}
	if errHeld != nil || errAdded != nil {
		t.Fatalf("holding update: %v; adding update: %v", errHeld, errAdded)
	}
	for id, want := range map[string]retry.State{"x": retry.Scheduled, "y": retry.Pending} {
		got, err := s.RetryGet(ctx, retry.StoreGetParams{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if got.Record.State != want {
			t.Errorf("%s: state %v, want %v", id, got.Record.State, want)
		}
	}
}
