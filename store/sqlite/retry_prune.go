package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hostguard/hostguard/retry"
)

// pruneChunk is how many done items one write transaction of RetryPrune
// deletes. SQLite has one writer: while a delete runs, every claim and
// settlement waits for it, so retention takes the writer in short turns
// (about 2 ms each at ten million items) instead of one long one, and a
// waiting claim gets in between two of them.
const pruneChunk = 100

const (
	retryPruneSQL = `DELETE FROM retry_items WHERE rid IN (
			SELECT rid FROM retry_items WHERE state = 3 AND updated_at < ? ORDER BY updated_at LIMIT ?)
		AND state = 3`
	retryPrunedSQL = `UPDATE retry_pruned SET n = n + ?, last_at = ? WHERE one = 0`
)

// RetryPrune implements retry.Store through the index of done items, in
// write transactions of at most pruneChunk items each; the retention
// counter moves in the transaction that deletes.
func (s *Store) RetryPrune(ctx context.Context, q retry.StorePruneParams) (retry.StorePruneResult, error) {
	var res retry.StorePruneResult
	st, err := s.stmts(ctx, retryPruneSQL, retryPrunedSQL)
	if err != nil {
		return res, fmt.Errorf("sqlite: retry prune: %w", err)
	}
	for res.Deleted < q.Limit {
		chunk := min(pruneChunk, q.Limit-res.Deleted)
		var n int64
		err := s.tx(ctx, func(tx *sql.Tx) error {
			r, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx, micros(q.Before), chunk)
			if err != nil {
				return err
			}
			if n, err = r.RowsAffected(); err != nil || n == 0 {
				return err
			}
			_, err = tx.StmtContext(ctx, st[1]).ExecContext(ctx, n, micros(q.Now))
			return err
		})
		if err != nil {
			return res, fmt.Errorf("sqlite: retry prune: %w", err)
		}
		res.Deleted += int(n)
		if int(n) < chunk {
			break
		}
	}
	return res, nil
}
