package sqlite

import (
	"context"
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
		p, err := s.plan(ctx, q.sql, q.args)
		if err != nil {
			return "", err
		}
		b.WriteString(p)
	}
	return b.String(), nil
}
