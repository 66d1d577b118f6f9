package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/hostguard/hostguard/store/storetest"
)

// TestFeedIDsMigrateToHashes rolls a database back to before migration 30,
// writes feed data the way earlier versions did (ids in clear), and checks
// that reopening migrates it and that the feed carries on from its
// position.
func TestFeedIDsMigrateToHashes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hostguard.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`DELETE FROM schema_migrations WHERE version = 30`)
	exec(`ALTER TABLE feed_seen RENAME COLUMN id_hash TO item_id`)
	exec(`INSERT INTO feed_cursors (name, version, state, seen_count, items, updated_at) VALUES ('legacy', 7, ?, 4, 4, 0)`,
		[]byte(storetest.LegacyFeedState))
	for _, id := range storetest.LegacyFeedIDs {
		exec(`INSERT INTO feed_seen (feed, item_id, seen_at) VALUES ('legacy', ?, 0)`, id)
	}
	// A cursor without a head or gaps, and an empty one, migrate too.
	exec(`INSERT INTO feed_cursors (name, version, state, updated_at) VALUES ('bare', 1, ?, 0), ('empty', 1, x'', 0)`,
		[]byte(`{"v":1,"synced_at":"2026-03-01T10:05:00Z"}`))

	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckLegacyFeedMigrated(t, s, func() []string {
		var out []string
		for _, q := range []string{`SELECT id_hash FROM feed_seen`, `SELECT CAST(state AS TEXT) FROM feed_cursors`} {
			rows, err := raw.QueryContext(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var v string
				if err := rows.Scan(&v); err != nil {
					t.Fatal(err)
				}
				out = append(out, v)
			}
			rows.Close()
		}
		return out
	})
	for _, name := range []string{"bare", "empty"} {
		if _, ok, err := s.FeedCursor(ctx, name); !ok || err != nil {
			t.Fatalf("cursor %s after the migration: %v, %v", name, ok, err)
		}
	}
}
