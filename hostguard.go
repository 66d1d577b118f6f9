// Package hostguard ties hostguard's capabilities to a durable store.
//
// Most programs use the capability packages directly (guard, transport,
// health, retry, budget, ...) and get their store from Open:
//
//	st, err := hostguard.Open(ctx, "hostguard.db")           // embedded SQLite
//	st, err := hostguard.Open(ctx, "postgres://u@db/hostguard") // shared PostgreSQL
//	tracker, err := health.New(st, health.Config{})
package hostguard

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/sqlite"
)

// Store is everything the durable capabilities need. Both store/sqlite and
// store/postgres implement it; each capability package declares the part it
// uses as its own Store interface.
type Store interface {
	io.Closer
	health.Store
	evidence.Store
	feed.Store
	retry.Store
	budget.SettingsStore
	leader.Store
}

// Compile-time proof that both engines implement every capability.
var (
	_ Store = (*sqlite.Store)(nil)
	_ Store = (*postgres.Store)(nil)
)

// Open opens the store named by dsn and applies its schema migrations.
// Accepted forms:
//
//	/path/to/file.db, ./file.db, file.db   an SQLite file (created if absent)
//	sqlite:PATH                            the same, explicitly
//	postgres://... or postgresql://...     a PostgreSQL database
func Open(ctx context.Context, dsn string) (Store, error) {
	kind, target, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "postgres":
		return postgres.Open(ctx, target)
	default:
		return sqlite.Open(ctx, target)
	}
}

// ParseDSN says which engine a dsn names ("sqlite" or "postgres") and what to
// pass to it. It never echoes a PostgreSQL dsn back, since it may hold a
// password.
func ParseDSN(dsn string) (kind, target string, err error) {
	d := strings.TrimSpace(dsn)
	switch {
	case d == "":
		return "", "", fmt.Errorf("hostguard: empty store dsn; %s", dsnForms)
	case strings.HasPrefix(d, "postgres://"), strings.HasPrefix(d, "postgresql://"):
		return "postgres", d, nil
	case strings.HasPrefix(d, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(d, "sqlite:"), "//")
		if p == "" {
			return "", "", fmt.Errorf("hostguard: sqlite: dsn without a path; %s", dsnForms)
		}
		return "sqlite", p, nil
	case strings.Contains(d, "://"):
		scheme, _, _ := strings.Cut(d, "://")
		return "", "", fmt.Errorf("hostguard: unsupported store scheme %q; %s", scheme, dsnForms)
	default:
		return "sqlite", d, nil
	}
}

const dsnForms = "accepted forms: a file path or sqlite:PATH (embedded SQLite), postgres://user@host:port/db (PostgreSQL)"
