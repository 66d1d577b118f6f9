// Package sqlite is hostguard's embedded default store: one SQLite file,
// opened through a pure-Go driver so that the binary needs no cgo.
//
// The file runs in WAL mode with a busy timeout. All writes go through one
// connection (SQLite allows one writer at a time, and queuing in Go is
// cheaper and fairer than spinning on SQLITE_BUSY); reads use a small pool of
// their own so that they never wait behind a write. The WAL is copied back
// into the database file by a connection of its own, beside the writer,
// never inside a write's commit (see checkpoint.go).
//
// Every capability's store methods live in a file named for the capability
// (health.go, retry.go, ...). Times are stored as INTEGER unix microseconds
// in UTC.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/store/internal/migration"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is a hostguard store backed by one SQLite file. It is safe for
// concurrent use. Close it when done.
type Store struct {
	path string
	w    *sql.DB // exactly one connection: the single writer
	r    *sql.DB // readers
	ckpt *checkpointer

	pruneChunk atomic.Int64 // see RetryPrune
	// timeout bounds each write (Config.Timeout); 0 none. Set once the
	// migrations ran: a long migration is not an outage.
	timeout time.Duration

	stmtMu    sync.Mutex
	prepStmts map[stmtKey]*sql.Stmt // see prepared
}

type stmtKey struct {
	db    *sql.DB
	query string
}

// Open opens (creating if needed) the SQLite database at path and brings its
// schema up to date. It refuses a database written by a newer hostguard.
// It is OpenConfig with the zero Config.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenConfig(ctx, path, Config{})
}

// OpenConfig is Open with the settings of c.
func OpenConfig(ctx context.Context, path string, c Config) (*Store, error) {
	if strings.TrimSpace(path) == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: database path %q must not contain '?' or '#'", path)
	}
	const common = "_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)"
	pragmas := "_pragma=busy_timeout(10000)&" + common
	u := (&url.URL{Scheme: "file", Opaque: path}).String()
	// The writer's busy timeout is the store's: see Config.Timeout.
	w, err := sql.Open("sqlite", u+"?"+common+"&_txlock=immediate"+
		fmt.Sprintf("&_pragma=busy_timeout(%d)&_pragma=wal_autocheckpoint(%d)", c.busyTimeout(), writerAutoCkptPages))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{path: path, w: w, prepStmts: map[stmtKey]*sql.Stmt{}}
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", u+"?"+pragmas+"&_pragma=query_only(ON)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(0)
	s.r = r
	if s.ckpt, err = startCheckpointer(path, pragmas); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	s.timeout = c.timeout()
	return s, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. Pending writes are already durable (each write
// is its own transaction).
func (s *Store) Close() error {
	var errs []error
	s.stmtMu.Lock()
	for k, st := range s.prepStmts {
		errs = append(errs, st.Close())
		delete(s.prepStmts, k)
	}
	s.stmtMu.Unlock()
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.close())
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	// A final checkpoint keeps the WAL file from outliving the process;
	// failing here is harmless, the next open replays the WAL.
	_, _ = s.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	errs = append(errs, s.w.Close())
	return errors.Join(errs...)
}

// SchemaVersion returns the newest schema version applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v)
	return int(v.Int64), err
}

// SchemaVersions returns every schema version applied to the database, in
// ascending order: versions are not contiguous, so this set, not the
// newest version, says whether two binaries run on the same schema.
func (s *Store) SchemaVersions(ctx context.Context) ([]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: schema versions: %w", err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("sqlite: schema versions: %w", err)
		}
		vs = append(vs, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: schema versions: %w", err)
	}
	return vs, nil
}

func (s *Store) migrate(ctx context.Context) error {
	ms, err := migration.Load(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at INTEGER NOT NULL)`); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		applied := map[int]bool{}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return err
			}
			applied[v] = true
		}
		if err := rows.Close(); err != nil {
			return err
		}
		pending, err := migration.Pending(ms, applied)
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", s.path, err)
		}
		for _, m := range pending {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("sqlite: migration %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, micros(time.Now())); err != nil {
				return err
			}
		}
		return nil
	})
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE, on the one writer
// connection) and commits it if fn returns nil.
//
// Its waits are bounded by the store's timeout: for the writer connection
// (the writes queued before it) by a deadline, for another process's
// lock on the file by SQLite's busy timeout, which is the same. Past
// either, nothing was written and the write fails as an outage. Once it
// holds the lock the transaction waits on nothing and runs to its end:
// cutting it for being slow (a large batch under load) would only make
// the client send it again.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	wctx, end := s.bound(ctx)
	if err := s.ckpt.hold(wctx); err != nil {
		return end(err)
	}
	conn, err := s.w.Conn(wctx)
	if err = end(err); err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.wrote(fmt.Errorf("sqlite: begin: %w", err))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return s.wrote(err)
	}
	if err := tx.Commit(); err != nil {
		return s.wrote(fmt.Errorf("sqlite: commit: %w", err))
	}
	return nil
}

// wrote notes a write's error: a full disk marks the store full (see
// checkpoint.go). It returns err.
func (s *Store) wrote(err error) error {
	if s.ckpt != nil && diskFull(err) {
		s.ckpt.set(&s.ckpt.full, true)
	}
	return err
}

// DiskFull reports whether the last writes found the disk full and no
// checkpoint has made room since: the daemon is then not ready.
func (s *Store) DiskFull() bool { return s.ckpt != nil && s.ckpt.full.Load() }

// prepared returns query prepared on db (s.w or s.r), preparing it on first
// use. The driver parses every one-shot statement anew, and for the short
// statements on the hot paths parsing is a large share of a call, so those
// paths keep their statements for the life of the Store. database/sql
// prepares a Stmt again on each pooled connection it runs on.
//
// It must not be called for s.w while this goroutine is inside s.tx:
// preparing on the writer would wait for its only connection. Use
// tx.StmtContext(ctx, st) on a statement prepared before the transaction.
func (s *Store) prepared(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	k := stmtKey{db, query}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st := s.prepStmts[k]; st != nil {
		return st, nil
	}
	pctx, end := ctx, func(err error) error { return err }
	if db == s.w {
		// Preparing waits for the writer connection like a write.
		pctx, end = s.bound(ctx)
	}
	st, err := db.PrepareContext(pctx, query)
	if err = end(err); err != nil {
		return nil, err
	}
	s.prepStmts[k] = st
	return st, nil
}

// stmts prepares (or finds) every query on the writer before a transaction.
func (s *Store) stmts(ctx context.Context, queries ...string) ([]*sql.Stmt, error) {
	out := make([]*sql.Stmt, len(queries))
	for i, q := range queries {
		st, err := s.prepared(ctx, s.w, q)
		if err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

// micros converts t to the stored form: unix microseconds, UTC. The zero
// time is stored as 0 so that "never" compares below every real time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromMicros is the inverse of micros.
func fromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}
