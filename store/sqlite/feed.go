package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/feed"
	msqlite "modernc.org/sqlite"
)

// feedIDHashFunc is the SQL name of feed.IDHash, which migration 0030 uses
// to hash the item ids stored in clear by earlier versions.
const feedIDHashFunc = "hostguard_feed_id_hash"

func init() {
	// Registered on the driver before any connection opens; the name is
	// namespaced so that it cannot clash with another user of the driver.
	msqlite.MustRegisterDeterministicScalarFunction(feedIDHashFunc, 1, func(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case nil:
			return nil, nil
		case string:
			return feed.IDHash(v), nil
		case []byte:
			return feed.IDHash(string(v)), nil
		}
		return nil, fmt.Errorf("%s: want text, got %T", feedIDHashFunc, args[0])
	})
}

const feedCursorColumns = `name, version, state, seen_count, items, updated_at`

// FeedCursor implements feed.Store.
func (s *Store) FeedCursor(ctx context.Context, name string) (feed.Cursor, bool, error) {
	c, err := scanCursor(s.r.QueryRowContext(ctx, `SELECT `+feedCursorColumns+` FROM feed_cursors WHERE name = ?`, name))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return feed.Cursor{}, false, nil
	case err != nil:
		return feed.Cursor{}, false, fmt.Errorf("sqlite: read feed cursor: %w", err)
	}
	return c, true, nil
}

type feedRowScanner interface{ Scan(dest ...any) error }

func scanCursor(r feedRowScanner) (feed.Cursor, error) {
	var c feed.Cursor
	var at int64
	if err := r.Scan(&c.Name, &c.Version, &c.State, &c.Seen, &c.Items, &at); err != nil {
		return feed.Cursor{}, err
	}
	c.UpdatedAt = fromMicros(at)
	return c, nil
}

// FeedCursors implements feed.Store.
func (s *Store) FeedCursors(ctx context.Context) ([]feed.Cursor, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+feedCursorColumns+` FROM feed_cursors ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read feed cursors: %w", err)
	}
	defer rows.Close()
	var out []feed.Cursor
	for rows.Next() {
		c, err := scanCursor(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: read feed cursors: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read feed cursors: %w", err)
	}
	return out, nil
}

// FeedCommit implements feed.Store. The one writer connection serialises
// commits, so the version check and the writes cannot interleave with
// another commit.
func (s *Store) FeedCommit(ctx context.Context, p feed.StoreCommitParams) (feed.StoreCommitResult, error) {
	var res feed.StoreCommitResult
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var version, seen int64
		err := tx.QueryRowContext(ctx, `SELECT version, seen_count FROM feed_cursors WHERE name = ?`, p.Name).Scan(&version, &seen)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if p.ExpectVersion != 0 {
				return fmt.Errorf("%w (it was deleted)", feed.ErrConflict)
			}
			if _, err := tx.ExecContext(ctx, `
				INSERT INTO feed_cursors (name, version, state, updated_at) VALUES (?, 0, ?, ?)`,
				p.Name, []byte{}, micros(p.Now)); err != nil {
				return fmt.Errorf("sqlite: feed commit: create cursor: %w", err)
			}
		case err != nil:
			return fmt.Errorf("sqlite: feed commit: read cursor: %w", err)
		case version != p.ExpectVersion:
			return fmt.Errorf("%w (version %d, expected %d)", feed.ErrConflict, version, p.ExpectVersion)
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO feed_seen (feed, id_hash, seen_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`)
		if err != nil {
			return fmt.Errorf("sqlite: feed commit: %w", err)
		}
		defer ins.Close()
		at := micros(p.Now)
		for _, id := range p.IDs {
			r, err := ins.ExecContext(ctx, p.Name, id, at)
			if err != nil {
				return fmt.Errorf("sqlite: feed commit: record ids: %w", err)
			}
			if n, _ := r.RowsAffected(); n == 1 {
				res.New = append(res.New, id)
			}
		}
		seen += int64(len(res.New))
		if !p.ForgetBefore.IsZero() {
			r, err := tx.ExecContext(ctx, `DELETE FROM feed_seen WHERE feed = ? AND seen_at < ?`, p.Name, micros(p.ForgetBefore))
			if err != nil {
				return fmt.Errorf("sqlite: feed commit: forget old ids: %w", err)
			}
			n, _ := r.RowsAffected()
			seen, res.Forgotten = seen-n, res.Forgotten+n
		}
		if p.SeenCap > 0 && seen > int64(p.SeenCap) {
			r, err := tx.ExecContext(ctx, `
				DELETE FROM feed_seen WHERE feed = ?1 AND id_hash IN (
					SELECT id_hash FROM feed_seen WHERE feed = ?1 ORDER BY seen_at, id_hash LIMIT ?2)`,
				p.Name, seen-int64(p.SeenCap))
			if err != nil {
				return fmt.Errorf("sqlite: feed commit: cap ids: %w", err)
			}
			n, _ := r.RowsAffected()
			seen, res.Forgotten = seen-n, res.Forgotten+n
		}
		err = tx.QueryRowContext(ctx, `
			UPDATE feed_cursors SET version = version + 1, state = coalesce(?, state),
				seen_count = ?, items = items + ?, updated_at = ?
			WHERE name = ? RETURNING version`,
			nullBytes(p.State), seen, len(res.New), at, p.Name).Scan(&res.Version)
		if err != nil {
			return fmt.Errorf("sqlite: feed commit: update cursor: %w", err)
		}
		return nil
	})
	if err != nil {
		return feed.StoreCommitResult{}, err
	}
	return res, nil
}

// nullBytes makes a nil slice NULL, so that coalesce keeps the stored value.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// FeedReset implements feed.Store.
func (s *Store) FeedReset(ctx context.Context, name string) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM feed_seen WHERE feed = ?`, name); err != nil {
			return fmt.Errorf("sqlite: feed reset: %w", err)
		}
		r, err := tx.ExecContext(ctx, `DELETE FROM feed_cursors WHERE name = ?`, name)
		if err != nil {
			return fmt.Errorf("sqlite: feed reset: %w", err)
		}
		n, err = r.RowsAffected()
		return err
	})
	return n > 0, err
}
