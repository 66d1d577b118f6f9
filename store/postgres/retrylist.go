package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// RetryList implements retrydriver.Store in one statement. The inner query walks
// at most p.Scan ids after p.After through the primary key, numbering
// them; the outer one keeps the matches and the last row walked, so that
// a walk that ran out of rows to look at still says where it stopped. Ids
// are ordered by the database's collation, the same order the primary key
// and the "id > after" condition use, so pages never overlap.
func (s *Store) RetryList(ctx context.Context, p retrydriver.ListParams) (retrydriver.ListResult, error) {
	var res retrydriver.ListResult
	query, args := retryListSQL(p)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return res, fmt.Errorf("postgres: retry list: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var rn int64
		var hit bool
		r, err := scanRetryRecord(rows, &rn, &hit)
		if err != nil {
			return res, fmt.Errorf("postgres: retry list: %w", err)
		}
		if len(res.Records) == p.Limit {
			res.More = true
			break
		}
		if hit {
			res.Records = append(res.Records, *r)
		}
		if rn == int64(p.Scan) {
			res.Last = r.ID
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("postgres: retry list: %w", err)
	}
	return res, nil
}

// retryListColumns are the columns of retryRecordColumns, payload left out.
const retryListColumns = `id, priority, state, next_at, attempts, fails, expiries, last_class, history, sources,
	worker, lease_gen, lease_key, settled_gen, settled_op, observations, last_seen, created_at, updated_at, host`

func retryListSQL(p retrydriver.ListParams) (string, []any) {
	var conds []string
	args := []any{p.After, int64(p.Scan)}
	if len(p.States) > 0 {
		names := make([]string, len(p.States))
		for i, st := range p.States {
			names[i] = strconv.Itoa(int(st))
		}
		conds = append(conds, "state IN ("+strings.Join(names, ", ")+")")
	}
	if p.Class != "" {
		args = append(args, p.Class)
		conds = append(conds, "last_class = $"+strconv.Itoa(len(args)))
	}
	if !p.DueBefore.IsZero() {
		args = append(args, p.DueBefore)
		conds = append(conds, "state IN (0, 1) AND next_at < $"+strconv.Itoa(len(args)))
	}
	hit := "true"
	if len(conds) > 0 {
		hit = "coalesce(" + strings.Join(conds, " AND ") + ", false)"
	}
	args = append(args, int64(p.Limit+1))
	return `SELECT ` + retryRecordColumns + `, rn, hit FROM (
		SELECT ` + retryListColumns + `, row_number() OVER (ORDER BY id) AS rn, ` + hit + ` AS hit
		FROM retry_items WHERE id > $1 ORDER BY id LIMIT $2) s
	WHERE hit OR rn = $2 ORDER BY id LIMIT $` + strconv.Itoa(len(args)), args
}

// retryDueCountSQL counts waiting items by next_at in one snapshot: those
// within the last bound through the wake and claim indexes, the rest as
// the difference from the exact counters, so that items waiting far ahead
// are never walked. $1..$5 are the bounds.
const retryDueCountSQL = `WITH w AS (
		SELECT next_at FROM retry_items
		WHERE NOT ready AND next_at IS NOT NULL AND next_at <= $5 AND state IN (0, 1)
		UNION ALL
		SELECT next_at FROM retry_items WHERE ready AND state IN (0, 1) AND next_at <= $5)
	SELECT count(*),
		count(*) FILTER (WHERE next_at <= $1), count(*) FILTER (WHERE next_at > $1 AND next_at <= $2),
		count(*) FILTER (WHERE next_at > $2 AND next_at <= $3), count(*) FILTER (WHERE next_at > $3 AND next_at <= $4),
		count(*) FILTER (WHERE next_at > $4),
		(SELECT coalesce(sum(n), 0)::bigint FROM retry_counts WHERE state IN (0, 1)),
		coalesce(min(next_at), (SELECT next_at FROM retry_items
			WHERE NOT ready AND next_at IS NOT NULL AND state IN (0, 1) ORDER BY next_at LIMIT 1))
	FROM w`

// RetryDue implements retrydriver.Store in one statement.
func (s *Store) RetryDue(ctx context.Context, p retrydriver.DueParams) (retrydriver.DueResult, error) {
	var res retrydriver.DueResult
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// As for Stats: parallel workers cost more than the short scans.
		if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
			return err
		}
		var err error
		res, err = retryDue(ctx, tx, p.Bounds)
		return err
	})
	if err != nil {
		return retrydriver.DueResult{}, fmt.Errorf("postgres: retry due: %w", err)
	}
	return res, nil
}

// retryDue counts in tx, which RetryStats shares with its other reads.
func retryDue(ctx context.Context, tx pgx.Tx, bounds []time.Time) (retrydriver.DueResult, error) {
	if len(bounds) != 5 {
		return retrydriver.DueResult{}, fmt.Errorf("%d bounds, want 5", len(bounds))
	}
	args := make([]any, len(bounds))
	for i, b := range bounds {
		args[i] = b
	}
	counts := make([]int, 6)
	var near, total int
	var oldest *time.Time
	err := tx.QueryRow(ctx, retryDueCountSQL, args...).Scan(&near,
		&counts[0], &counts[1], &counts[2], &counts[3], &counts[4], &total, &oldest)
	if err != nil {
		return retrydriver.DueResult{}, err
	}
	counts[5] = max(total-near, 0)
	res := retrydriver.DueResult{Counts: counts}
	if oldest != nil {
		res.Oldest = oldest.UTC()
	}
	return res, nil
}

// RetryDuePlan returns PostgreSQL's plan for RetryDue, for the conformance
// case that pins it to the partial indexes.
func (s *Store) RetryDuePlan(ctx context.Context) (string, error) {
	now := time.Now().UTC()
	return s.plan(ctx, retryDueCountSQL, []any{now, now.Add(time.Hour), now.Add(24 * time.Hour),
		now.Add(7 * 24 * time.Hour), now.Add(30 * 24 * time.Hour)})
}

// RetryListPlan returns PostgreSQL's plan for a RetryList of p.
func (s *Store) RetryListPlan(ctx context.Context, p retrydriver.ListParams) (string, error) {
	q, args := retryListSQL(p)
	return s.plan(ctx, q, args)
}

func (s *Store) plan(ctx context.Context, query string, args []any) (string, error) {
	rows, err := s.pool.Query(ctx, "EXPLAIN "+query, args...)
	if err != nil {
		return "", fmt.Errorf("postgres: query plan: %w", err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", fmt.Errorf("postgres: query plan: %w", err)
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("postgres: query plan: %w", err)
	}
	return b.String(), nil
}
