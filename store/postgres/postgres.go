// Package postgres is hostguard's shared store for several nodes, built on
// pgx. Every statement that changes shared state is written to be safe when
// several nodes run it at once: single-statement upserts with the arithmetic
// in SQL, row locks, or FOR UPDATE SKIP LOCKED for hand-outs.
//
// Migrations are embedded and applied on Open under a PostgreSQL advisory
// lock, so nodes that start together do not race to create the schema. The
// schema lives in the connection's search_path (add search_path=NAME to the
// DSN to keep hostguard in a schema of its own).
//
// Every capability's store methods live in a file named for the capability
// (health.go, retry.go, ...). Times are stored as timestamptz.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hostguard/hostguard/store/internal/migration"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is a hostguard store backed by PostgreSQL. It is safe for concurrent
// use; several Stores (on several nodes) may share one database.
type Store struct {
	pool *pgxpool.Pool
	wake retryWaker // wakes waiting retry claims; see retry_wake.go
	jobs wakeJobs   // finishes wakes of parked items; see retry_host.go
	// clock is the cluster's clock (ClusterNow); see clock.go.
	clock *clusterClock
	// txAttempts, when not zero, replaces retryTxAttempts (tests).
	txAttempts int
	closeOnce  sync.Once
}

// Open connects to the database named by dsn (postgres://... or a key=value
// connection string) and brings its schema up to date. It refuses a database
// written by a newer hostguard. It is OpenConfig with the zero Config.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenConfig(ctx, dsn, Config{})
}

// OpenConfig is Open with the settings of c.
func OpenConfig(ctx context.Context, dsn string, c Config) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message can quote the DSN, password included: say only what kind of problem it is.
		return nil, errors.New("postgres: the connection string cannot be parsed (want postgres://user@host:port/db?options)")
	}
	if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	dl := &deadlines{d: c.timeout()}
	if cfg.ConnConfig.Tracer == nil {
		cfg.ConnConfig.Tracer = dl
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A connection attempt into a black hole otherwise waits for
		// TCP's own limit; connect_timeout in the DSN overrides this.
		cfg.ConnConfig.ConnectTimeout = dl.d
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect to %s: %w", cfg.ConnConfig.Host, err)
	}
	s := &Store{pool: pool}
	s.wake.id = newWakeID()
	s.wake.gap = notifyGap
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	s.initClock(time.Now)
	if err := s.clock.anchor(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: read the database's clock: %w", err)
	}
	dl.armed.Store(true)
	s.startWakeJobs()
	return s, nil
}

// Pool is the underlying connection pool, for callers that need a dedicated
// connection (leader election holds one).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close stops the store's background work and closes every connection
// of the store. Calls after the first do nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopWakeJobs()
		s.closeWake()
		s.pool.Close()
	})
	return nil
}

// SchemaVersions returns every schema version applied to the database, in
// ascending order: versions are not contiguous, so this set, not the
// newest version, says whether two binaries run on the same schema.
func (s *Store) SchemaVersions(ctx context.Context) ([]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("postgres: schema versions: %w", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("postgres: schema versions: %w", err)
	}
	return vs, nil
}

// SchemaVersion returns the newest schema version applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v *int
	err := s.pool.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v)
	if v == nil {
		return 0, err
	}
	return *v, err
}

func (s *Store) migrate(ctx context.Context) error {
	ms, err := migration.Load(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Release()
	// The lock is per schema, so that databases holding several hostguard
	// schemas (tests do) migrate them independently.
	const lockKey = `hashtext('hostguard.migrate.' || current_schema())`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+lockKey+`)`); err != nil {
		return fmt.Errorf("postgres: take the migration lock: %w", err)
	}
	defer func() {
		// Unlock even if ctx is done, or the session would keep the lock
		// after the connection returns to the pool.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(`+lockKey+`)`); err != nil {
			conn.Conn().Close(uctx)
		}
	}()
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("postgres: create schema_migrations: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		applied := make(map[int]bool, len(vs))
		for _, v := range vs {
			applied[v] = true
		}
		pending, err := migration.Pending(ms, applied)
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		for _, m := range pending {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("postgres: migration %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
}
