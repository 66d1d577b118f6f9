package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// RetryClaimPlan returns SQLite's query plans (EXPLAIN QUERY PLAN) for the
// reads of a claim of n items now — the due items to promote and the
// candidates of each lane — without running the claim. It is for
// diagnosis (and for the conformance case that pins the claim to its
// partial indexes): a plan that scans retry_items instead of
// retry_items_wake and retry_items_claim makes claims cost time in
// proportion to the whole table.
func (s *Store) RetryClaimPlan(ctx context.Context, n int) (string, error) {
	now := micros(time.Now())
	var b strings.Builder
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{retryDueSQL, []any{now, 512}},
		{retryCandidatesSQL, []any{0, now, n}},
		{retryCandidatesSQL, []any{1, now, n}},
	} {
		rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q.sql, q.args...)
		if err != nil {
			return "", fmt.Errorf("sqlite: retry claim plan: %w", err)
		}
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				rows.Close()
				return "", fmt.Errorf("sqlite: retry claim plan: %w", err)
			}
			b.WriteString(detail)
			b.WriteByte('\n')
		}
		if err := rows.Close(); err != nil {
			return "", fmt.Errorf("sqlite: retry claim plan: %w", err)
		}
	}
	return b.String(), nil
}
