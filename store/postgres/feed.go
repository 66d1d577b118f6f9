package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/feed"
	"github.com/jackc/pgx/v5"
)

// FeedCursor implements feed.Store.
func (s *Store) FeedCursor(ctx context.Context, name string) (feed.Cursor, bool, error) {
	c, err := scanCursor(s.pool.QueryRow(ctx, `
		SELECT name, version, state, seen_count, items, updated_at FROM feed_cursors WHERE name = $1`, name))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return feed.Cursor{}, false, nil
	case err != nil:
		return feed.Cursor{}, false, fmt.Errorf("postgres: read feed cursor: %w", err)
	}
	return c, true, nil
}

func scanCursor(r pgx.Row) (feed.Cursor, error) {
	var c feed.Cursor
	var at time.Time
	if err := r.Scan(&c.Name, &c.Version, &c.State, &c.Seen, &c.Items, &at); err != nil {
		return feed.Cursor{}, err
	}
	c.UpdatedAt = at.UTC()
	return c, nil
}

// FeedCursors implements feed.Store.
func (s *Store) FeedCursors(ctx context.Context) ([]feed.Cursor, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT name, version, state, seen_count, items, updated_at FROM feed_cursors ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("postgres: read feed cursors: %w", err)
	}
	defer rows.Close()
	var out []feed.Cursor
	for rows.Next() {
		c, err := scanCursor(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: read feed cursors: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read feed cursors: %w", err)
	}
	return out, nil
}

// FeedCommit implements feed.Store. The cursor row is locked (or created)
// first, so that two nodes committing the same feed serialise and the
// second sees the first's version and conflicts.
func (s *Store) FeedCommit(ctx context.Context, p feed.StoreCommitParams) (feed.StoreCommitResult, error) {
	var res feed.StoreCommitResult
	var bodyErr error // the body's own errors, wrapped where they arise
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		bodyErr = s.feedCommit(ctx, tx, p, &res)
		return bodyErr
	})
	switch {
	case bodyErr != nil:
		return feed.StoreCommitResult{}, bodyErr
	case err != nil:
		return feed.StoreCommitResult{}, fmt.Errorf("postgres: feed commit: %w", err)
	}
	return res, nil
}

func (s *Store) feedCommit(ctx context.Context, tx pgx.Tx, p feed.StoreCommitParams, res *feed.StoreCommitResult) error {
	var version, seen int64
	err := tx.QueryRow(ctx, `SELECT version, seen_count FROM feed_cursors WHERE name = $1 FOR UPDATE`, p.Name).Scan(&version, &seen)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if p.ExpectVersion != 0 {
			return fmt.Errorf("%w (it was deleted)", feed.ErrConflict)
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO feed_cursors (name, version, state, updated_at) VALUES ($1, 0, ''::bytea, $2)
			ON CONFLICT (name) DO NOTHING`, p.Name, p.Now.UTC())
		if err != nil {
			return fmt.Errorf("postgres: feed commit: create cursor: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w (created by another sync)", feed.ErrConflict)
		}
	case err != nil:
		return fmt.Errorf("postgres: feed commit: read cursor: %w", err)
	case version != p.ExpectVersion:
		return fmt.Errorf("%w (version %d, expected %d)", feed.ErrConflict, version, p.ExpectVersion)
	}
	if len(p.IDs) > 0 {
		// WITH ORDINALITY keeps the callers' order for the ids that
		// turn out to be new.
		rows, err := tx.Query(ctx, `
			WITH given AS (SELECT id, n FROM unnest($2::text[]) WITH ORDINALITY AS g(id, n)),
			ins AS (
				INSERT INTO feed_seen (feed, id_hash, seen_at)
				SELECT DISTINCT ON (id) $1, id, $3 FROM given
				ON CONFLICT DO NOTHING RETURNING id_hash)
			SELECT g.id FROM ins JOIN given g ON g.id = ins.id_hash
			GROUP BY g.id ORDER BY min(g.n)`,
			p.Name, p.IDs, p.Now.UTC())
		if err != nil {
			return fmt.Errorf("postgres: feed commit: record ids: %w", err)
		}
		res.New, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("postgres: feed commit: record ids: %w", err)
		}
	}
	seen += int64(len(res.New))
	if !p.ForgetBefore.IsZero() {
		tag, err := tx.Exec(ctx, `DELETE FROM feed_seen WHERE feed = $1 AND seen_at < $2`, p.Name, p.ForgetBefore.UTC())
		if err != nil {
			return fmt.Errorf("postgres: feed commit: forget old ids: %w", err)
		}
		seen, res.Forgotten = seen-tag.RowsAffected(), res.Forgotten+tag.RowsAffected()
	}
	if p.SeenCap > 0 && seen > int64(p.SeenCap) {
		// ARRAY(...) keeps the delete on the primary key (see
		// evidenceTrim).
		tag, err := tx.Exec(ctx, `
			DELETE FROM feed_seen WHERE feed = $1 AND id_hash = ANY (ARRAY(
				SELECT id_hash FROM feed_seen WHERE feed = $1 ORDER BY seen_at, id_hash LIMIT $2))`,
			p.Name, seen-int64(p.SeenCap))
		if err != nil {
			return fmt.Errorf("postgres: feed commit: cap ids: %w", err)
		}
		seen, res.Forgotten = seen-tag.RowsAffected(), res.Forgotten+tag.RowsAffected()
	}
	err = tx.QueryRow(ctx, `
		UPDATE feed_cursors SET version = version + 1, state = coalesce($2, state),
			seen_count = $3, items = items + $4, updated_at = $5
		WHERE name = $1 RETURNING version`,
		p.Name, p.State, seen, int64(len(res.New)), p.Now.UTC()).Scan(&res.Version)
	if err != nil {
		return fmt.Errorf("postgres: feed commit: update cursor: %w", err)
	}
	return nil
}

// FeedReset implements feed.Store.
func (s *Store) FeedReset(ctx context.Context, name string) (bool, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM feed_seen WHERE feed = $1`, name); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM feed_cursors WHERE name = $1`, name)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: feed reset: %w", err)
	}
	return n > 0, nil
}
