package postgres

import (
	"context"
	"fmt"

	"github.com/hostguard/hostguard/retry"
)

// retryWakeHostSQL is the wake of one host's parked items (see
// retry.Store.RetryWakeHost) in one statement, with its counter: $1 now,
// $2 the spread in microseconds, $3 the host, $4 the classes. It finds
// the items through retry_items_host and locks them in byte order of
// their ids before it writes any (see RetryUpdate); claims skip locked
// rows, so a large wake does not hold them up. An item another writer
// changed meanwhile is judged again as it is then (READ COMMITTED), so a
// failure that moved it out of reach is not undone.
const retryWakeHostSQL = `WITH picked AS (
		SELECT id FROM retry_items
		WHERE host = $3 AND state = 1 AND NOT ready AND next_at > $1::timestamptz + $2::bigint * interval '1 microsecond'
			AND last_class = ANY ($4::text[])
		ORDER BY id COLLATE "C" FOR UPDATE),
	woken AS (
		UPDATE retry_items t SET next_at = $1::timestamptz + floor(random() * ($2 + 1)) * interval '1 microsecond', updated_at = $1
		FROM picked p WHERE t.id = p.id RETURNING 1),
	n AS (SELECT count(*) AS n FROM woken),
	counted AS (
		UPDATE retry_host_wakes SET events = events + 1, n = retry_host_wakes.n + n.n, last_at = $1
		FROM n WHERE one = 0 AND n.n > 0)
	SELECT n FROM n`

// RetryWakeHost implements retry.Store in one statement.
func (s *Store) RetryWakeHost(ctx context.Context, q retry.StoreWakeHostParams) (retry.StoreWakeHostResult, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, retryWakeHostSQL, retryWakeHostArgs(q)...).Scan(&n); err != nil {
		return retry.StoreWakeHostResult{}, fmt.Errorf("postgres: retry wake host: %w", err)
	}
	if n > 0 {
		s.retryChanged()
	}
	return retry.StoreWakeHostResult{Woken: int(n)}, nil
}

func retryWakeHostArgs(q retry.StoreWakeHostParams) []any {
	return []any{q.Now, q.Spread.Microseconds(), q.Host, q.Classes}
}

// RetryWakeHostPlan returns PostgreSQL's plan (EXPLAIN) for the wake of
// host's parked items, without running it: the conformance case pins it
// to retry_items_host.
func (s *Store) RetryWakeHostPlan(ctx context.Context, q retry.StoreWakeHostParams) (string, error) {
	return s.plan(ctx, retryWakeHostSQL, retryWakeHostArgs(q))
}
