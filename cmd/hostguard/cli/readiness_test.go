package cli

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestOldNodeIsNotReadyOnceTheSchemaMovesOn applies, behind a running
// store's back, a migration it does not know with a version below its
// newest, as a newer hostguard would in a rolling upgrade: /readyz's
// check turns not ready and names the version and those it knows.
func TestOldNodeIsNotReadyOnceTheSchemaMovesOn(t *testing.T) {
	const future = 29 // a free number below every engine's newest
	engines := map[string]struct {
		dsn   func(t *testing.T) string
		apply func(t *testing.T, dsn string)
	}{
		"sqlite": {
			dsn: func(t *testing.T) string { return filepath.Join(t.TempDir(), "h.db") },
			apply: func(t *testing.T, dsn string) {
				db, err := sql.Open("sqlite", dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)`, future); err != nil {
					t.Fatal(err)
				}
			},
		},
		"postgres": {
			dsn: func(t *testing.T) string { return storetest.PostgresDSN(t) },
			apply: func(t *testing.T, dsn string) {
				conn, err := pgx.Connect(context.Background(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(context.Background())
				if _, err := conn.Exec(context.Background(), `INSERT INTO schema_migrations (version, name) VALUES ($1, 'future')`, future); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for name, e := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := e.dsn(t)
			st, err := hostguard.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			check, err := readiness(ctx, st)
			if err != nil || check == nil {
				t.Fatalf("readiness: %v", err)
			}
			if err := check(ctx); err != nil {
				t.Fatalf("ready before the schema moved: %v", err)
			}
			e.apply(t, dsn)
			err = check(ctx)
			if err == nil {
				t.Fatal("still ready after a version this daemon does not know was applied")
			}
			if msg := err.Error(); !strings.Contains(msg, "versions 29 ") || !strings.Contains(msg, "knows 1-") {
				t.Fatalf("the reason %q does not name the version applied and those known", msg)
			}
		})
	}
}
