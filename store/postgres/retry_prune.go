package postgres

import (
	"context"
	"fmt"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// retryPruneSQL deletes one batch of old done items through the index of
// done items and counts them, in one statement. SKIP LOCKED leaves alone
// a done item that a writer (a late sighting) holds.
const retryPruneSQL = `WITH d AS (
		SELECT id FROM retry_items WHERE state = 3 AND updated_at < $1
		ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED),
	gone AS (
		DELETE FROM retry_items t WHERE t.id = ANY (ARRAY(SELECT id FROM d)) AND t.state = 3 RETURNING 1),
	n AS (SELECT count(*) AS n FROM gone),
	counted AS (
		UPDATE retry_pruned SET n = retry_pruned.n + n.n, last_at = $3 FROM n WHERE one = 0 AND n.n > 0)
	SELECT n FROM n`

// RetryPrune implements retrydriver.Store in one statement.
func (s *Store) RetryPrune(ctx context.Context, q retrydriver.PruneParams) (retrydriver.PruneResult, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, retryPruneSQL, q.Before, int64(q.Limit), q.Now).Scan(&n); err != nil {
		return retrydriver.PruneResult{}, fmt.Errorf("postgres: retry prune: %w", err)
	}
	return retrydriver.PruneResult{Deleted: int(n)}, nil
}
