package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/feed"
)

// FeedCursor implements feed.Store.
func (s *Store) FeedCursor(ctx context.Context, name string) (feed.Cursor, bool, error) {
	c, err := scanCursor(s.r.QueryRowContext(ctx, `
		SELECT name, version, state, seen_count, items, updated_at FROM feed_cursors WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return feed.Cursor{}, false, nil
	}
	return c, err == nil, err
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
	rows, err := s.r.QueryContext(ctx, `
		SELECT name, version, state, seen_count, items, updated_at FROM feed_cursors ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []feed.Cursor
	for rows.Next() {
		c, err := scanCursor(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// FeedCommit implements feed.Store. The one writer connection serialises
// commits, so the version check and the writes cannot interleave with
// another commit.
func (s *Store) FeedCommit(ctx context.Context, p feed.CommitParams) (feed.CommitResult, error) {
	var res feed.CommitResult
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
				return err
			}
		case err != nil:
			return err
		case version != p.ExpectVersion:
			return fmt.Errorf("%w (version %d, expected %d)", feed.ErrConflict, version, p.ExpectVersion)
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO feed_seen (feed, item_id, seen_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`)
		if err != nil {
			return err
		}
		defer ins.Close()
		at := micros(p.Now)
		for _, id := range p.IDs {
			r, err := ins.ExecContext(ctx, p.Name, id, at)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 1 {
				res.New = append(res.New, id)
			}
		}
		seen += int64(len(res.New))
		if p.SeenCap > 0 && seen > int64(p.SeenCap) {
			r, err := tx.ExecContext(ctx, `
				DELETE FROM feed_seen WHERE feed = ?1 AND item_id IN (
					SELECT item_id FROM feed_seen WHERE feed = ?1 ORDER BY seen_at, item_id LIMIT ?2)`,
				p.Name, seen-int64(p.SeenCap))
			if err != nil {
				return err
			}
			n, _ := r.RowsAffected()
			seen -= n
		}
		return tx.QueryRowContext(ctx, `
			UPDATE feed_cursors SET version = version + 1, state = coalesce(?, state),
				seen_count = ?, items = items + ?, updated_at = ?
			WHERE name = ? RETURNING version`,
			nullBytes(p.State), seen, len(res.New), at, p.Name).Scan(&res.Version)
	})
	return res, err
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
			return err
		}
		r, err := tx.ExecContext(ctx, `DELETE FROM feed_cursors WHERE name = ?`, name)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return n > 0, err
}
