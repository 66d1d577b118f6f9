package postgres

import (
	"context"
	"fmt"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// retryWakeHostSQL is the wake of one host's parked items (see
// retrydriver.Store.RetryWakeHost) in one statement, with its counter: $1 now,
// $2 the spread in microseconds, $3 the host, $4 the classes. It finds
// the items through retry_items_host, whose next_at makes a second wake
// for the same recovery find nothing without reading a row. It locks them
// with SKIP LOCKED, so it never waits for a row and cannot deadlock
// whatever order it takes them in: a row another transaction holds is
// being written by a sighting or a settlement, which decides that item's
// schedule itself. Claims skip locked rows too, and the wake's rows are
// not due, so the two never wait for each other.
const retryWakeHostSQL = `WITH woken AS (
		UPDATE retry_items t SET next_at = $1::timestamptz + floor(random() * ($2 + 1)) * interval '1 microsecond', updated_at = $1
		WHERE t.id = ANY (ARRAY(
			SELECT id FROM retry_items
			WHERE host = $3 AND state = 1 AND NOT ready AND next_at > $1::timestamptz + $2::bigint * interval '1 microsecond'
				AND last_class = ANY ($4::text[])
			FOR UPDATE SKIP LOCKED))
		RETURNING 1),
	n AS (SELECT count(*) AS n FROM woken),
	counted AS (
		UPDATE retry_host_wakes SET events = events + 1, n = retry_host_wakes.n + n.n, last_at = $1
		FROM n WHERE one = 0 AND n.n > 0)
	SELECT n FROM n`

// RetryWakeHost implements retrydriver.Store in one statement.
func (s *Store) RetryWakeHost(ctx context.Context, q retrydriver.WakeHostParams) (retrydriver.WakeHostResult, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, retryWakeHostSQL, retryWakeHostArgs(q)...).Scan(&n); err != nil {
		return retrydriver.WakeHostResult{}, fmt.Errorf("postgres: retry wake host: %w", err)
	}
	if n > 0 {
		s.retryChanged()
	}
	return retrydriver.WakeHostResult{Woken: int(n)}, nil
}

func retryWakeHostArgs(q retrydriver.WakeHostParams) []any {
	return []any{q.Now, q.Spread.Microseconds(), q.Host, q.Classes}
}

// RetryWakeHostPlan returns PostgreSQL's plan (EXPLAIN) for the wake of
// host's parked items, without running it: the conformance case pins it
// to retry_items_host.
func (s *Store) RetryWakeHostPlan(ctx context.Context, q retrydriver.WakeHostParams) (string, error) {
	return s.plan(ctx, retryWakeHostSQL, retryWakeHostArgs(q))
}
