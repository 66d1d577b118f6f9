package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hostguard/hostguard/retry"
)

// RetryPrune implements retry.Store in one write transaction, through the
// index of done items.
func (s *Store) RetryPrune(ctx context.Context, q retry.StorePruneParams) (retry.StorePruneResult, error) {
	var res retry.StorePruneResult
	err := s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM retry_items WHERE rid IN (
				SELECT rid FROM retry_items WHERE state = 3 AND updated_at < ? ORDER BY updated_at LIMIT ?)
			AND state = 3`, micros(q.Before), q.Limit)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		res.Deleted = int(n)
		if n == 0 {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE retry_pruned SET n = n + ?, last_at = ? WHERE one = 0`, n, micros(q.Now))
		return err
	})
	if err != nil {
		return retry.StorePruneResult{}, fmt.Errorf("sqlite: retry prune: %w", err)
	}
	return res, nil
}
