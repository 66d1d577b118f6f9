package queue_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/bench/queue"
	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// pgx's pool and River's client stop their goroutines on Close/Stop;
	// modernc's SQLite driver keeps none.
	goleak.VerifyTestMain(m)
}

// serverDSN is a PostgreSQL server for the tests; without one they skip,
// except under CI, where that is a failure.
func serverDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("HGBENCH_POSTGRES")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err == nil {
		err = conn.Ping(ctx)
		conn.Close(ctx)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required under CI: %v", err)
		}
		t.Skipf("no PostgreSQL: %v", err)
	}
	return dsn
}

func fresh(t testing.TB, name string) string {
	t.Helper()
	dsn, err := queue.FreshPostgres(context.Background(), serverDSN(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

var small = queue.CycleOptions{N: 300, AddBatch: 100, Workers: 2, ClaimBatch: 20, RiverWorkers: 20, Limit: time.Minute}

func checkCycle(t *testing.T, c queue.Cycle, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if c.N != small.N || c.Add <= 0 || c.Work <= 0 {
		t.Fatalf("cycle %+v: want %d items with positive times", c, small.N)
	}
}

func TestHostguardCycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := queue.HostguardCycle(ctx, filepath.Join(t.TempDir(), "hg.db"), small)
	checkCycle(t, c, err)
	c, err = queue.HostguardCycle(ctx, fresh(t, "hgbench_test_hg"), small)
	checkCycle(t, c, err)
}

func TestRiverCycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := queue.RiverSQLiteCycle(ctx, filepath.Join(t.TempDir(), "river.db"), small)
	checkCycle(t, c, err)
	c, err = queue.RiverPostgresCycle(ctx, fresh(t, "hgbench_test_river"), small)
	checkCycle(t, c, err)
}

var tiny = queue.DormantOptions{Backlog: 2_000, Trickle: 30, Every: time.Millisecond, Poll: time.Millisecond, Burst: 200, Limit: time.Minute}

func checkDormant(t *testing.T, d queue.Dormant, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Lags) != tiny.Trickle || d.Burst != tiny.Burst || d.Drain < d.Reactivate || d.Load <= 0 {
		t.Fatalf("%s: %d lags, burst %d, reactivate %v, drain %v, load %v", d.System, len(d.Lags), d.Burst, d.Reactivate, d.Drain, d.Load)
	}
}

func TestHostguardDormant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := queue.HostguardDormant(ctx, filepath.Join(t.TempDir(), "hg.db"), tiny)
	checkDormant(t, d, err)
	if len(d.Claims) == 0 {
		t.Fatal("no claim was timed")
	}
	if d.BatchDrain < d.BatchReactivate || d.BatchReactivate <= 0 {
		t.Fatalf("batch burst: reactivate %v, drain %v", d.BatchReactivate, d.BatchDrain)
	}
	d, err = queue.HostguardDormant(ctx, fresh(t, "hgbench_test_hg_dormant"), tiny)
	checkDormant(t, d, err)
}

func TestRiverDormant(t *testing.T) {
	t.Parallel()
	d, err := queue.RiverPostgresDormant(context.Background(), fresh(t, "hgbench_test_river_dormant"), tiny)
	checkDormant(t, d, err)
}

func TestBadOptionsAreClearErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	_, err := queue.HostguardCycle(ctx, filepath.Join(dir, "a.db"), queue.CycleOptions{N: -1})
	if err == nil || !strings.Contains(err.Error(), "queue: N is -1") {
		t.Fatalf("negative N: %v", err)
	}
	_, err = queue.HostguardDormant(ctx, filepath.Join(dir, "b.db"), queue.DormantOptions{Backlog: 10, Burst: 11})
	if err == nil || !strings.Contains(err.Error(), "Burst is 11") {
		t.Fatalf("burst above backlog: %v", err)
	}
	if _, err := queue.FreshPostgres(ctx, "postgres://127.0.0.1/x", "Robert'); DROP TABLE students;--"); err == nil {
		t.Fatal("FreshPostgres took a name that is not an identifier")
	}
	if _, err := os.Stat(filepath.Join(dir, "a.db")); err == nil {
		t.Fatal("bad options still created a store")
	}
}
