package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// RetryList implements retrydriver.Store in one statement. The inner query walks
// at most p.Scan ids after p.After through the id index, numbering them;
// the outer one keeps the matches and the last row walked, so that a walk
// that ran out of rows to look at still says where it stopped.
func (s *Store) RetryList(ctx context.Context, p retrydriver.ListParams) (retrydriver.ListResult, error) {
	var res retrydriver.ListResult
	query, args := retryListSQL(p)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return res, fmt.Errorf("sqlite: retry list: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var row retryRow
		var rn int
		var hit bool
		if err := scanRetryRecord(rows, &row, &rn, &hit); err != nil {
			return res, fmt.Errorf("sqlite: retry list: %w", err)
		}
		if len(res.Records) == p.Limit {
			res.More = true
			break
		}
		if hit {
			res.Records = append(res.Records, row.rec)
		}
		if rn == p.Scan {
			res.Last = row.rec.ID
		}
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("sqlite: retry list: %w", err)
	}
	return res, nil
}

// retryListColumns are the columns of retryRecordColumns, payload left out.
const retryListColumns = `rid, id, priority, state, next_at, attempts, fails, expiries, last_class, history,
	sources, worker, lease_gen, lease_key, settled_gen, settled_op, observations, last_seen, created_at, updated_at, host`

func retryListSQL(p retrydriver.ListParams) (string, []any) {
	var conds []string
	args := []any{p.After, p.Scan}
	if len(p.States) > 0 {
		names := make([]string, len(p.States))
		for i, st := range p.States {
			names[i] = strconv.Itoa(int(st))
		}
		conds = append(conds, "state IN ("+strings.Join(names, ", ")+")")
	}
	if p.Class != "" {
		args = append(args, p.Class)
		conds = append(conds, "last_class = ?"+strconv.Itoa(len(args)))
	}
	if !p.DueBefore.IsZero() {
		args = append(args, micros(p.DueBefore))
		conds = append(conds, "state IN (0, 1) AND next_at < ?"+strconv.Itoa(len(args)))
	}
	hit := "1"
	if len(conds) > 0 {
		hit = "coalesce(" + strings.Join(conds, " AND ") + ", 0)"
	}
	args = append(args, p.Limit+1)
	return `SELECT ` + retryRecordColumns + `, rn, hit FROM (
		SELECT ` + retryListColumns + `, row_number() OVER (ORDER BY id) AS rn, ` + hit + ` AS hit
		FROM retry_items WHERE id > ?1 ORDER BY id LIMIT ?2)
	WHERE hit OR rn = ?2 ORDER BY id LIMIT ?` + strconv.Itoa(len(args)), args
}

// retryDueCountSQL counts waiting items by next_at in one snapshot: those
// within the last bound through the wake and claim indexes, the rest as
// the difference from the exact counters, so that items waiting far ahead
// are never walked. ?1..?5 are the bounds.
const retryDueCountSQL = `WITH w AS (
		SELECT next_at FROM retry_items
		WHERE ready = 0 AND next_at IS NOT NULL AND next_at <= ?5 AND state IN (0, 1)
		UNION ALL
		SELECT next_at FROM retry_items WHERE ready = 1 AND state IN (0, 1) AND next_at <= ?5)
	SELECT count(*),
		coalesce(sum(next_at <= ?1), 0), coalesce(sum(next_at > ?1 AND next_at <= ?2), 0),
		coalesce(sum(next_at > ?2 AND next_at <= ?3), 0), coalesce(sum(next_at > ?3 AND next_at <= ?4), 0),
		coalesce(sum(next_at > ?4), 0),
		(SELECT coalesce(sum(n), 0) FROM retry_counts WHERE state IN (0, 1)),
		coalesce(min(next_at), (SELECT next_at FROM retry_items
			WHERE ready = 0 AND next_at IS NOT NULL AND state IN (0, 1) ORDER BY next_at LIMIT 1))
	FROM w`

// RetryDue implements retrydriver.Store in one statement.
func (s *Store) RetryDue(ctx context.Context, p retrydriver.DueParams) (retrydriver.DueResult, error) {
	res, err := retryDue(ctx, s.r, p.Bounds)
	if err != nil {
		return retrydriver.DueResult{}, fmt.Errorf("sqlite: retry due: %w", err)
	}
	return res, nil
}

// retryDue counts through q, a transaction when the counts go with other
// reads of one snapshot (RetryStats).
func retryDue(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, bounds []time.Time) (retrydriver.DueResult, error) {
	if len(bounds) != 5 {
		return retrydriver.DueResult{}, fmt.Errorf("%d bounds, want 5", len(bounds))
	}
	args := make([]any, len(bounds))
	for i, b := range bounds {
		args[i] = micros(b)
	}
	var near, total int
	counts := make([]int, 6)
	var oldest sql.NullInt64
	err := q.QueryRowContext(ctx, retryDueCountSQL, args...).Scan(&near,
		&counts[0], &counts[1], &counts[2], &counts[3], &counts[4], &total, &oldest)
	if err != nil {
		return retrydriver.DueResult{}, err
	}
	counts[5] = max(total-near, 0)
	res := retrydriver.DueResult{Counts: counts}
	if oldest.Valid {
		res.Oldest = fromMicros(oldest.Int64)
	}
	return res, nil
}

// RetryDuePlan returns SQLite's query plan for RetryDue, for the
// conformance case that pins it to the partial indexes.
func (s *Store) RetryDuePlan(ctx context.Context) (string, error) {
	now := time.Now()
	args := []any{micros(now), micros(now.Add(time.Hour)), micros(now.Add(24 * time.Hour)),
		micros(now.Add(7 * 24 * time.Hour)), micros(now.Add(30 * 24 * time.Hour))}
	return s.plan(ctx, retryDueCountSQL, args)
}

// RetryListPlan returns SQLite's query plan for a RetryList of p.
func (s *Store) RetryListPlan(ctx context.Context, p retrydriver.ListParams) (string, error) {
	q, args := retryListSQL(p)
	return s.plan(ctx, q, args)
}

func (s *Store) plan(ctx context.Context, query string, args []any) (string, error) {
	rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		return "", fmt.Errorf("sqlite: query plan: %w", err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return "", fmt.Errorf("sqlite: query plan: %w", err)
		}
		b.WriteString(detail)
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("sqlite: query plan: %w", err)
	}
	return b.String(), nil
}
