package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/storeerr"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/sqlite"
)

// A write that another process's lock holds up fails as an outage once
// the store's timeout has passed (SQLite's own busy timeout was 10 s),
// and writes nothing; once the lock is gone, writes go through again.
func TestWriteTimeoutBehindAnotherProcessesLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hostguard.db")
	const timeout = 300 * time.Millisecond
	st, err := sqlite.OpenConfig(ctx, path, sqlite.Config{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sched, err := retry.New(st, retry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sched.Add(ctx, retry.NewItem{ID: "before"}); err != nil {
		t.Fatal(err)
	}

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

	for _, id := range []string{"held-1", "held-2"} {
		start := time.Now()
		_, err := sched.Add(ctx, retry.NewItem{ID: id})
		took := time.Since(start)
		if err == nil || !storeerr.Unavailable(err) {
			t.Fatalf("adding %s behind another process's write lock: %v; want an outage", id, err)
		}
		if took > timeout+2*time.Second {
			t.Fatalf("adding %s failed after %v; want about the store's timeout, %v", id, took, timeout)
		}
	}

	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"held-1", "held-2"} {
		if _, err := sched.Get(ctx, id); !errors.Is(err, retry.ErrNotFound) {
			t.Fatalf("%s, whose write timed out, reads %v; want not found", id, err)
		}
	}
	if _, err := sched.Add(ctx, retry.NewItem{ID: "after"}); err != nil {
		t.Fatalf("adding once the lock is gone: %v", err)
	}
}
