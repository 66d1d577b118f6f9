package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// RetryClaimPlan returns PostgreSQL's plan for a claim of n items now, as
// EXPLAIN prints it for the statement of the retry_claim function, without
// running the claim. It is for diagnosis (and
// for the conformance case that pins the claim to its partial indexes):
// a plan that scans retry_items instead of retry_items_claim and
// retry_items_wake makes claims cost time in proportion to the whole
// table.
func (s *Store) RetryClaimPlan(ctx context.Context, n int) (string, error) {
	// The plan of the function's statement, not of the call: read it
	// from the catalogue, so that what is explained is what runs.
	var src string
	if err := s.pool.QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE proname = 'retry_claim'
		AND pronamespace = current_schema()::regnamespace`).Scan(&src); err != nil {
		return "", fmt.Errorf("postgres: retry claim plan: %w", err)
	}
	_, body, ok := strings.Cut(src, "RETURN QUERY")
	end := strings.LastIndex(body, ";")
	if !ok || end < 0 {
		return "", fmt.Errorf("postgres: retry claim plan: retry_claim has no RETURN QUERY statement")
	}
	now := time.Now().UTC()
	return s.plan(ctx, body[:end], []any{now, int64(n), int64(n / 3), now.Add(time.Minute), nil,
		int64(512), int64(3), make([]string, n)})
}
