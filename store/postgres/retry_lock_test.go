package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/retry/retrydriver"
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
// shard, which it returns.
func sameShard(ctx context.Context, t *testing.T, s *postgres.Store) (shard int32, release func()) {
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
			pair, shard = []*pgxpool.Conn{o, c}, pid%16
			continue
		}
		byShard[pid%16] = c
	}
	for _, c := range pair {
		c.Release()
	}
	return shard, func() {
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
	s, db := openToSeeDeadlocks(ctx, t, dsn)
	now := time.Now().UTC().Truncate(time.Microsecond)
	if _, err := s.RetryAdd(ctx, retrydriver.AddParams{Now: now, Items: []retrydriver.NewItem{{ID: "x", NotBefore: now}}}); err != nil {
		t.Fatal(err)
	}
	_, release := sameShard(ctx, t, s)
	defer release()

	// The writer holding an item: it locks x, and once let go makes it
	// scheduled, so that its statement trigger takes the shard's counter
	// row of pending items.
	holding, letGo := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		_, err := s.RetryUpdate(ctx, retrydriver.UpdateParams{Now: now, IDs: []string{"x"},
			Apply: func(_ int, r *retrydriver.Record) (bool, error) {
				close(holding)
				<-letGo
				r.State, r.NextAt = retrydriver.Scheduled, now.Add(time.Hour)
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
		res, err := s.RetryUpdate(ctx, retrydriver.UpdateParams{Now: now, IDs: []string{"x", "y"},
			AddMissing: &retrydriver.NewItem{},
			Apply:      func(int, *retrydriver.Record) (bool, error) { return false, nil }})
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
	for id, want := range map[string]retrydriver.State{"x": retrydriver.Scheduled, "y": retrydriver.Pending} {
		got, err := s.RetryGet(ctx, retrydriver.GetParams{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if got.Record.State != want {
			t.Errorf("%s: state %v, want %v", id, got.Record.State, want)
		}
	}
}

// collatedDB creates a database whose default collation is ICU's en-US,
// which sorts ids differently from their bytes ("a_b" before "a-b", "a"
// before "A", "ä" before "b"), and returns its DSN. The database is
// dropped when the test ends.
func collatedDB(ctx context.Context, t *testing.T) string {
	t.Helper()
	storetest.PostgresDSN(t) // skips without a server
	base := os.Getenv("HOSTGUARD_TEST_POSTGRES")
	if base == "" {
		base = storetest.DefaultPostgres
	}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "hgtest_icu_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name+
		` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "42704" || pe.Code == "0A000" || pe.Code == "42601") {
			t.Skipf("this server cannot create an ICU database: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var icu bool
	if err := db.QueryRow(ctx, `SELECT 'a_b' < 'a-b' AND 'a' < 'A'`).Scan(&icu); err != nil || !icu {
		t.Fatalf("the database sorts ids by their bytes (%v): the test needs a collation that does not", err)
	}
	return u.String()
}

// schemaDSN creates a schema in the database of dsn and returns a DSN that
// uses it, with the run-time settings of params added.
func schemaDSN(ctx context.Context, t *testing.T, dsn string, params map[string]string) string {
	t.Helper()
	db := connect(ctx, t, dsn)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "hgtest_" + hex.EncodeToString(b[:])
	if _, err := db.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestRetryCollatedUpdateAndSucceed: on a database whose collation does not
// sort ids by their bytes, a locking update and a success of the same
// items lock them in one order. The update used to lock in the
// collation's order (ORDER BY id) and the success in the order of its
// sorted ids (bytes); each took the row the other wanted next.
//
// The test holds a KEY SHARE lock on "a-b": the locking read (FOR UPDATE)
// waits for it, the success's update (FOR NO KEY UPDATE) does not, so
// the success can take "a-b" first while the update waits.
func TestRetryCollatedUpdateAndSucceed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := schemaDSN(ctx, t, collatedDB(ctx, t), nil)
	s, db := openToSeeDeadlocks(ctx, t, dsn)

	now := time.Now().UTC().Truncate(time.Microsecond)
	ids := []string{"a-b", "a_b"} // byte order
	if _, err := s.RetryAdd(ctx, retrydriver.AddParams{Now: now, Items: []retrydriver.NewItem{
		{ID: ids[0], NotBefore: now}, {ID: ids[1], NotBefore: now}}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.RetryClaim(ctx, retrydriver.ClaimParams{Now: now, N: 2, RetryQuota: 1, Lease: time.Hour,
		Keys: []string{"k0", "k1"}, PromoteLimit: 10, MaxExpiries: 3})
	if err != nil || len(c.Grants) != 2 {
		t.Fatalf("claim: %v, %d grants", err, len(c.Grants))
	}
	keyOf := map[string]string{}
	for _, g := range c.Grants {
		keyOf[g.ID] = g.Key
	}

	blocker, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(context.Background())
	if _, err := blocker.Exec(ctx, `SELECT 1 FROM retry_items WHERE id = 'a-b' FOR KEY SHARE`); err != nil {
		t.Fatal(err)
	}
	var blockerPID int32
	if err := blocker.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&blockerPID); err != nil {
		t.Fatal(err)
	}
	watch := connect(ctx, t, dsn)

	updated := make(chan error, 1)
	go func() {
		_, err := s.RetryUpdate(ctx, retrydriver.UpdateParams{Now: now, IDs: ids,
			Apply: func(int, *retrydriver.Record) (bool, error) { return false, nil }})
		updated <- err
	}()
	waitfor.True(t, 10*time.Second, "the update waits for the test's lock", func() bool {
		for _, by := range blockedBy(ctx, t, watch) {
			if slices.Contains(by, blockerPID) {
				return true
			}
		}
		return false
	})
	succeeded := make(chan error, 1)
	go func() {
		_, err := s.RetrySucceed(ctx, retrydriver.SucceedParams{Now: now, IDs: ids,
			Keys: []string{keyOf[ids[0]], keyOf[ids[1]]}})
		succeeded <- err
	}()
	var errSucceed error
	done := false
	waitfor.True(t, 10*time.Second, "the success ends or waits", func() bool {
		select {
		case errSucceed = <-succeeded:
			done = true
			return true
		default:
		}
		return len(blockedBy(ctx, t, watch)) >= 2
	})
	if err := blocker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !done {
		errSucceed = <-succeeded
	}
	errUpdate := <-updated
	if isDeadlock(errUpdate) || isDeadlock(errSucceed) {
		t.Fatalf("deadlock: update: %v; success: %v", errUpdate, errSucceed)
	}
	if errUpdate != nil || errSucceed != nil {
		t.Fatalf("update: %v; success: %v", errUpdate, errSucceed)
	}
	for _, id := range ids {
		got, err := s.RetryGet(ctx, retrydriver.GetParams{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if got.Record.State != retrydriver.Done {
			t.Errorf("%s: state %v, want done", id, got.Record.State)
		}
	}
}

// TestRetryLocksInByteOrder: every statement of the retry store that
// waits for item rows takes them in the order of their ids' bytes, on a
// database whose collation sorts them otherwise, with custom and with
// generic plans. The test holds one row; each statement, stopped at it,
// must hold exactly the rows whose ids' bytes sort before it.
func TestRetryLocksInByteOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := collatedDB(ctx, t)
	ids := []string{"A", "a", "a-b", "a_b", "b", "ä"} // byte order
	const stop = "a_b"
	want := ids[:slices.Index(ids, stop)] // the collation's: a, A
	now := time.Now().UTC().Truncate(time.Microsecond)
	type op func(ctx context.Context, s *postgres.Store, keys []string) error
	ops := []struct {
		name string
		run  op
	}{
		{"add", func(ctx context.Context, s *postgres.Store, _ []string) error {
			items := make([]retrydriver.NewItem, len(ids))
			for i, id := range ids {
				items[i] = retrydriver.NewItem{ID: id, NotBefore: now}
			}
			_, err := s.RetryAdd(ctx, retrydriver.AddParams{Now: now, Items: items})
			return err
		}},
		{"update", func(ctx context.Context, s *postgres.Store, _ []string) error {
			_, err := s.RetryUpdate(ctx, retrydriver.UpdateParams{Now: now, IDs: ids,
				Apply: func(int, *retrydriver.Record) (bool, error) { return true, nil }})
			return err
		}},
		{"update adding", func(ctx context.Context, s *postgres.Store, _ []string) error {
			_, err := s.RetryUpdate(ctx, retrydriver.UpdateParams{Now: now, IDs: append([]string{"c"}, ids...),
				AddMissing: &retrydriver.NewItem{},
				Apply:      func(int, *retrydriver.Record) (bool, error) { return true, nil }})
			return err
		}},
		{"observe", func(ctx context.Context, s *postgres.Store, _ []string) error {
			_, err := s.RetryObserve(ctx, retrydriver.ObserveParams{Now: now, IDs: ids, MaxPriority: 10, PullTo: now})
			return err
		}},
		{"succeed", func(ctx context.Context, s *postgres.Store, keys []string) error {
			_, err := s.RetrySucceed(ctx, retrydriver.SucceedParams{Now: now, IDs: ids, Keys: keys})
			return err
		}},
		{"succeed and claim", func(ctx context.Context, s *postgres.Store, keys []string) error {
			_, err := s.RetrySucceedClaim(ctx, retrydriver.SucceedClaimParams{
				Succeed: retrydriver.SucceedParams{Now: now, IDs: ids, Keys: keys},
				Claim: retrydriver.ClaimParams{Now: now, N: 1, RetryQuota: 1, Lease: time.Hour,
					Keys: []string{"next"}, PromoteLimit: 10, MaxExpiries: 3}})
			return err
		}},
	}
	for _, plans := range []string{"auto", "force_generic_plan"} {
		for _, o := range ops {
			t.Run(o.name+"/"+plans, func(t *testing.T) {
				dsn := schemaDSN(ctx, t, db, map[string]string{"plan_cache_mode": plans})
				s, err := postgres.Open(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				keys := leaseAll(ctx, t, s, ids, now)
				conn := connect(ctx, t, dsn)
				hold, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer hold.Rollback(context.Background())
				var holder int32
				if err := hold.QueryRow(ctx, `SELECT pg_backend_pid() FROM retry_items WHERE id = $1 FOR UPDATE`, stop).Scan(&holder); err != nil {
					t.Fatal(err)
				}
				ran := make(chan error, 1)
				go func() { ran <- o.run(ctx, s, keys) }()
				watch := connect(ctx, t, dsn)
				locked := heldWhileWaiting(ctx, t, watch, holder, stop, ids,
					`SELECT id FROM retry_items WHERE id = ANY ($1) FOR UPDATE SKIP LOCKED`, ids)
				if err := hold.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				if err := <-ran; err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(locked, want) {
					t.Fatalf("waiting for %q, the statement held %q; want %q", stop, locked, want)
				}
			})
		}
	}
}

// openToSeeDeadlocks opens a store on dsn that runs an aborted write
// once (a deadlock is to be seen, not run again), and a connection of the
// test's own; both close with the test.
func openToSeeDeadlocks(ctx context.Context, t *testing.T, dsn string) (*postgres.Store, *pgx.Conn) {
	t.Helper()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	postgres.SetRetryTxAttempts(s, 1)
	return s, connect(ctx, t, dsn)
}

// connect opens a connection of the test's own to dsn, closed with the
// test.
func connect(ctx context.Context, t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// heldWhileWaiting waits until a statement is blocked by holder (waiting
// for stop), then returns which of all, stop aside, it holds: the rows
// that probe, a SELECT ... FOR UPDATE SKIP LOCKED of the keys of all, cannot
// take.
func heldWhileWaiting(ctx context.Context, t *testing.T, watch *pgx.Conn, holder int32, stop string, all []string,
	probe string, args ...any) []string {
	t.Helper()
	waitfor.True(t, 10*time.Second, "the statement waits for "+stop, func() bool {
		for _, by := range blockedBy(ctx, t, watch) {
			if slices.Contains(by, holder) {
				return true
			}
		}
		return false
	})
	tx, err := watch.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, probe, args...)
	if err != nil {
		t.Fatal(err)
	}
	free, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var locked []string
	for _, k := range all {
		if k != stop && !slices.Contains(free, k) {
			locked = append(locked, k)
		}
	}
	return locked
}

// leaseAll adds ids as items and leases them, and returns their lease
// tokens in the order of ids.
func leaseAll(ctx context.Context, t *testing.T, s *postgres.Store, ids []string, now time.Time) []string {
	t.Helper()
	items := make([]retrydriver.NewItem, len(ids))
	tokens := make([]string, len(ids))
	for i, id := range ids {
		items[i] = retrydriver.NewItem{ID: id, NotBefore: now}
		tokens[i] = fmt.Sprintf("k%d", i)
	}
	if _, err := s.RetryAdd(ctx, retrydriver.AddParams{Now: now, Items: items}); err != nil {
		t.Fatal(err)
	}
	c, err := s.RetryClaim(ctx, retrydriver.ClaimParams{Now: now, N: len(ids), RetryQuota: 1, Lease: time.Hour,
		Keys: tokens, PromoteLimit: 100, MaxExpiries: 3})
	if err != nil || len(c.Grants) != len(ids) {
		t.Fatalf("claim: %v, %d grants", err, len(c.Grants))
	}
	keys := make([]string, len(ids))
	for _, g := range c.Grants {
		keys[slices.Index(ids, g.ID)] = g.Key
	}
	return keys
}

// TestRetryCountersLockInByteOrder: the counter rows of a shard are taken
// in the byte order of their class, by the statement trigger and by
// RetrySucceedClaim's locking read alike, on a database whose collation
// sorts the classes otherwise.
func TestRetryCountersLockInByteOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := schemaDSN(ctx, t, collatedDB(ctx, t), nil)
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Microsecond)
	classes := []string{"A", "a", "a-b", "a_b", "b", "ä"} // byte order
	const stop = "a_b"
	want := classes[:slices.Index(classes, stop)]
	ids := make([]string, len(classes))
	for i := range ids {
		ids[i] = fmt.Sprintf("item%d", i)
	}
	keys := leaseAll(ctx, t, s, ids, now)
	shard, release := sameShard(ctx, t, s)
	defer release()
	conn := connect(ctx, t, dsn)
	watch := connect(ctx, t, dsn)
	// Rows that exist: a row a statement inserts is invisible to the probe.
	if _, err := conn.Exec(ctx, `INSERT INTO retry_counts (shard, state, class, n)
		SELECT $1, 1, c, 0 FROM unnest($2::text[]) AS c ON CONFLICT DO NOTHING`, shard, classes); err != nil {
		t.Fatal(err)
	}

	// lockedAt runs run while the test holds the shard's counter row of
	// scheduled items of class stop, and returns the classes of the
	// other such rows that run held when it waited for it.
	lockedAt := func(run func() error) []string {
		t.Helper()
		hold, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Rollback(context.Background())
		var holder int32
		if err := hold.QueryRow(ctx, `SELECT pg_backend_pid() FROM retry_counts
			WHERE shard = $1 AND state = 1 AND class = $2 FOR UPDATE`, shard, stop).Scan(&holder); err != nil {
			t.Fatal(err)
		}
		ran := make(chan error, 1)
		go func() { ran <- run() }()
		locked := heldWhileWaiting(ctx, t, watch, holder, stop, classes,
			`SELECT class FROM retry_counts WHERE shard = $1 AND state = 1 FOR UPDATE SKIP LOCKED`, shard)
		if err := hold.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		return locked
	}

	// The trigger: each item fails with its own class.
	got := lockedAt(func() error {
		_, err := s.RetryUpdate(ctx, retrydriver.UpdateParams{Now: now, IDs: ids,
			Apply: func(i int, r *retrydriver.Record) (bool, error) {
				r.State, r.LastClass, r.NextAt = retrydriver.Scheduled, classes[i], now.Add(time.Hour)
				return true, nil
			}})
		return err
	})
	if !slices.Equal(got, want) {
		t.Errorf("the statement trigger, waiting for %q, held %q; want %q", stop, got, want)
	}
	// The locking read of a success and claim.
	got = lockedAt(func() error {
		_, err := s.RetrySucceedClaim(ctx, retrydriver.SucceedClaimParams{
			Succeed: retrydriver.SucceedParams{Now: now, IDs: ids, Keys: keys},
			Claim: retrydriver.ClaimParams{Now: now, N: 1, RetryQuota: 1, Lease: time.Hour,
				Keys: []string{"next"}, PromoteLimit: 10, MaxExpiries: 3}})
		return err
	})
	if !slices.Equal(got, want) {
		t.Errorf("RetrySucceedClaim, waiting for %q, held %q; want %q", stop, got, want)
	}
}

// TestRetryDeadlockVictimRunsAgain: a write transaction that PostgreSQL
// aborts as a deadlock's victim runs again and commits; with a single
// run allowed, the caller gets the 40P01. The other side is the test's
// own transaction, which locks the items in the opposite order and waits
// longer before it looks for deadlocks, so that the store's is the one
// aborted.
func TestRetryDeadlockVictimRunsAgain(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	ids := []string{"p", "q"}
	ops := []struct {
		name string
		run  func(ctx context.Context, s *postgres.Store, keys []string) error
		// check reads what run committed.
		check func(ctx context.Context, t *testing.T, s *postgres.Store)
	}{
		{"update", func(ctx context.Context, s *postgres.Store, _ []string) error {
			_, err := s.RetryUpdate(ctx, retrydriver.UpdateParams{Now: now, IDs: ids,
				Apply: func(_ int, r *retrydriver.Record) (bool, error) {
					r.Priority++
					return true, nil
				}})
			return err
		}, func(ctx context.Context, t *testing.T, s *postgres.Store) {
			for _, id := range ids {
				got, err := s.RetryGet(ctx, retrydriver.GetParams{ID: id})
				if err != nil || got.Record.Priority != 1 {
					t.Errorf("%s: priority %d (%v), want 1: one change, applied once", id, got.Record.Priority, err)
				}
			}
		}},
		{"succeed and claim", func(ctx context.Context, s *postgres.Store, keys []string) error {
			_, err := s.RetrySucceedClaim(ctx, retrydriver.SucceedClaimParams{
				Succeed: retrydriver.SucceedParams{Now: now, IDs: ids, Keys: keys},
				Claim: retrydriver.ClaimParams{Now: now, N: 1, RetryQuota: 1, Lease: time.Hour,
					Keys: []string{"next"}, PromoteLimit: 10, MaxExpiries: 3}})
			return err
		}, func(ctx context.Context, t *testing.T, s *postgres.Store) {
			for _, id := range ids {
				got, err := s.RetryGet(ctx, retrydriver.GetParams{ID: id})
				if err != nil || got.Record.State != retrydriver.Done {
					t.Errorf("%s: state %v (%v), want done", id, got.Record.State, err)
				}
			}
		}},
	}
	for _, o := range ops {
		for _, attempts := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/attempts=%d", o.name, attempts), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				dsn := storetest.PostgresDSN(t)
				s, err := postgres.Open(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if attempts > 0 {
					postgres.SetRetryTxAttempts(s, attempts)
				}
				keys := leaseAll(ctx, t, s, ids, now)
				conn := connect(ctx, t, dsn)
				watch := connect(ctx, t, dsn)

				other, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer other.Rollback(context.Background())
				var holder int32
				if err := other.QueryRow(ctx, `SELECT pg_backend_pid() FROM retry_items WHERE id = 'q' FOR UPDATE`).Scan(&holder); err != nil {
					t.Fatal(err)
				}
				if _, err := other.Exec(ctx, `SET LOCAL deadlock_timeout = '30s'`); err != nil {
					t.Fatal(err)
				}
				ran := make(chan error, 1)
				go func() { ran <- o.run(ctx, s, keys) }()
				waitfor.True(t, 10*time.Second, "the store's transaction waits for q", func() bool {
					for _, by := range blockedBy(ctx, t, watch) {
						if slices.Contains(by, holder) {
							return true
						}
					}
					return false
				})
				// The store holds p and waits for q; the test, holding q,
				// now waits for p. PostgreSQL aborts the store's run.
				if _, err := other.Exec(ctx, `SELECT 1 FROM retry_items WHERE id = 'p' FOR UPDATE`); err != nil {
					t.Fatalf("the test's transaction: %v", err)
				}
				if err := other.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				err = <-ran
				if attempts == 1 {
					if !isDeadlock(err) {
						t.Fatalf("one run: got %v, want the deadlock", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				o.check(ctx, t, s)
			})
		}
	}
}
