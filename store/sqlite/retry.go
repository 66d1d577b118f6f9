package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// Compile-time proof that the store serves the retry scheduler.
var _ retry.Store = (*Store)(nil)

// RetryAdd implements retry.Store.
func (s *Store) RetryAdd(ctx context.Context, q retry.AddQuery) (retry.AddResult, error) {
	var res retry.AddResult
	now := micros(q.Now)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res = retry.AddResult{}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO retry_items
			(id, priority, state, ready, next_at, created_at, updated_at, payload)
			VALUES (?, ?, 0, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`)
		if err != nil {
			return err
		}
		defer ins.Close()
		raise, err := tx.PrepareContext(ctx, `UPDATE retry_items SET priority = ?, updated_at = ?
			WHERE id = ? AND priority < ?`)
		if err != nil {
			return err
		}
		defer raise.Close()
		for _, it := range q.Items {
			at := micros(it.NotBefore)
			r, err := ins.ExecContext(ctx, it.ID, it.Priority, retryFlag(at <= now), at, now, now, retryBlob(it.Payload))
			if err != nil {
				return err
			}
			if n, err := r.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				res.Added++
				continue
			}
			res.Existing++
			if _, err := raise.ExecContext(ctx, it.Priority, now, it.ID, it.Priority); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return retry.AddResult{}, fmt.Errorf("sqlite: retry add: %w", err)
	}
	return res, nil
}

type retryCandidate struct {
	rid      int64
	priority int
	nextAt   int64
	state    retry.State
}

// RetryClaim implements retry.Store.
func (s *Store) RetryClaim(ctx context.Context, q retry.ClaimQuery) (retry.ClaimResult, error) {
	var res retry.ClaimResult
	now := micros(q.Now)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res = retry.ClaimResult{}
		expired, err := retryPromote(ctx, tx, now, q.PromoteLimit, q.MaxExpiries)
		if err != nil {
			return err
		}
		res.Expired = expired
		var lanes [2][]retryCandidate
		for _, st := range []retry.State{retry.Pending, retry.Scheduled} {
			rows, err := tx.QueryContext(ctx, `SELECT rid, priority, next_at FROM retry_items
				WHERE ready = 1 AND state = ? AND next_at <= ?
				ORDER BY priority DESC, next_at LIMIT ?`, st, now, q.N)
			if err != nil {
				return err
			}
			for rows.Next() {
				c := retryCandidate{state: st}
				if err := rows.Scan(&c.rid, &c.priority, &c.nextAt); err != nil {
					rows.Close()
					return err
				}
				lanes[st] = append(lanes[st], c)
			}
			if err := rows.Close(); err != nil {
				return err
			}
		}
		picks := retryPick(lanes[retry.Pending], lanes[retry.Scheduled], q.N, q.RetryQuota)
		if len(picks) == 0 {
			return nil
		}
		var last int64
		if err := tx.QueryRowContext(ctx, `UPDATE retry_lease_seq SET gen = gen + ? WHERE one = 0 RETURNING gen`,
			len(picks)).Scan(&last); err != nil {
			return err
		}
		gen := last - int64(len(picks))
		until := q.Now.Add(q.Lease)
		lease, err := tx.PrepareContext(ctx, `UPDATE retry_items SET state = 2, ready = 0, next_at = ?,
			attempts = attempts + 1, lease_gen = ?, worker = ?, updated_at = ?
			WHERE rid = ? RETURNING id, attempts, fails, priority, coalesce(last_class, ''), payload`)
		if err != nil {
			return err
		}
		defer lease.Close()
		for _, c := range picks {
			gen++
			g := retry.Grant{Gen: gen, Until: until, DueAt: fromMicros(c.nextAt), Was: c.state}
			if err := lease.QueryRowContext(ctx, micros(until), gen, retryText(q.Worker), now, c.rid).Scan(
				&g.ID, &g.Attempt, &g.Failures, &g.Priority, &g.LastClass, &g.Payload); err != nil {
				return err
			}
			res.Grants = append(res.Grants, g)
		}
		return nil
	})
	if err != nil {
		return retry.ClaimResult{}, fmt.Errorf("sqlite: retry claim: %w", err)
	}
	return res, nil
}

// retryPromote marks the oldest items whose time has come as ready (see
// retry.ClaimQuery) and returns the ids of leases that ran out once too
// often, which it leaves for the scheduler.
func retryPromote(ctx context.Context, tx *sql.Tx, now int64, limit, maxExpiries int) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rid, id, state, expiries FROM retry_items
		WHERE ready = 0 AND next_at IS NOT NULL AND next_at <= ?
		ORDER BY next_at LIMIT ?`, now, limit)
	if err != nil {
		return nil, err
	}
	var promote []int64
	var expired []string
	for rows.Next() {
		var rid int64
		var id string
		var state retry.State
		var expiries int
		if err := rows.Scan(&rid, &id, &state, &expiries); err != nil {
			rows.Close()
			return nil, err
		}
		if state == retry.Leased && expiries+1 >= maxExpiries {
			expired = append(expired, id)
			continue
		}
		promote = append(promote, rid)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if len(promote) == 0 {
		return expired, nil
	}
	list, _ := json.Marshal(promote)
	_, err = tx.ExecContext(ctx, `UPDATE retry_items SET ready = 1,
			expiries = CASE state WHEN 2 THEN expiries + 1 ELSE expiries END,
			worker = CASE state WHEN 2 THEN NULL ELSE worker END,
			state = CASE state WHEN 2 THEN 1 ELSE state END,
			updated_at = ?
		WHERE rid IN (SELECT value FROM json_each(?))`, now, string(list))
	return expired, err
}

// retryPick applies the retry quota to the best pending and scheduled
// candidates (each sorted, at most n) and returns the picks in claim order.
func retryPick(pending, scheduled []retryCandidate, n, quota int) []retryCandidate {
	retries := min(len(scheduled), quota)
	fresh := min(len(pending), n-retries)
	retries = min(len(scheduled), n-fresh)
	out := append(append(make([]retryCandidate, 0, fresh+retries), pending[:fresh]...), scheduled[:retries]...)
	slices.SortStableFunc(out, func(a, b retryCandidate) int {
		if c := cmp.Compare(b.priority, a.priority); c != 0 {
			return c
		}
		return cmp.Compare(a.nextAt, b.nextAt)
	})
	return out
}

const retryRecordColumns = `rid, id, priority, state, next_at, attempts, fails, expiries,
	coalesce(last_class, ''), coalesce(history, ''), coalesce(worker, ''),
	lease_gen, settled_gen, settled_op, updated_at`

type retryRow struct {
	rid   int64
	rec   retry.Record
	dirty bool
}

func scanRetryRecord(sc interface{ Scan(...any) error }, row *retryRow) error {
	var nextAt sql.NullInt64
	var history string
	var updated int64
	r := &row.rec
	if err := sc.Scan(&row.rid, &r.ID, &r.Priority, &r.State, &nextAt, &r.Attempts, &r.Failures, &r.Expiries,
		&r.LastClass, &history, &r.Worker, &r.LeaseGen, &r.SettledGen, &r.SettledOp, &updated); err != nil {
		return err
	}
	r.NextAt = fromMicros(nextAt.Int64)
	r.UpdatedAt = fromMicros(updated)
	h, err := retry.DecodeHistory([]byte(history))
	if err != nil {
		return fmt.Errorf("item %q: %w", r.ID, err)
	}
	r.History = h
	return nil
}

// RetryUpdate implements retry.Store.
func (s *Store) RetryUpdate(ctx context.Context, q retry.UpdateQuery) ([]error, error) {
	var errs []error
	err := s.tx(ctx, func(tx *sql.Tx) error {
		errs = make([]error, len(q.IDs))
		sel, err := tx.PrepareContext(ctx, `SELECT `+retryRecordColumns+` FROM retry_items WHERE id = ?`)
		if err != nil {
			return err
		}
		defer sel.Close()
		loaded := make(map[string]*retryRow, len(q.IDs))
		var order []*retryRow
		for i, id := range q.IDs {
			row, seen := loaded[id]
			if !seen {
				row = &retryRow{}
				err := scanRetryRecord(sel.QueryRowContext(ctx, id), row)
				if errors.Is(err, sql.ErrNoRows) {
					row = nil
				} else if err != nil {
					return err
				}
				loaded[id] = row
				if row != nil {
					order = append(order, row)
				}
			}
			if row == nil {
				errs[i] = retry.ErrNotFound
				continue
			}
			changed, err := q.Apply(i, &row.rec)
			if err != nil {
				errs[i] = err
				continue
			}
			row.dirty = row.dirty || changed
		}
		up, err := tx.PrepareContext(ctx, `UPDATE retry_items SET priority = ?, state = ?, ready = ?, next_at = ?,
			attempts = ?, fails = ?, expiries = ?, last_class = ?, history = ?, worker = ?,
			lease_gen = ?, settled_gen = ?, settled_op = ?, updated_at = ? WHERE rid = ?`)
		if err != nil {
			return err
		}
		defer up.Close()
		for _, row := range order {
			if !row.dirty {
				continue
			}
			r := &row.rec
			var nextAt any
			if !r.NextAt.IsZero() {
				nextAt = micros(r.NextAt)
			}
			if _, err := up.ExecContext(ctx, r.Priority, r.State, retryFlag(r.Ready(q.Now)), nextAt,
				r.Attempts, r.Failures, r.Expiries, retryText(r.LastClass), retryHistory(retry.EncodeHistory(r.History)),
				retryText(r.Worker), r.LeaseGen, r.SettledGen, r.SettledOp, micros(r.UpdatedAt), row.rid); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: retry update: %w", err)
	}
	return errs, nil
}

// RetryObserve implements retry.Store.
func (s *Store) RetryObserve(ctx context.Context, q retry.ObserveQuery) (retry.ObserveResult, error) {
	var res retry.ObserveResult
	now := micros(q.Now)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res = retry.ObserveResult{}
		var nextAt sql.NullInt64
		err := tx.QueryRowContext(ctx, `UPDATE retry_items SET
				observations = observations + 1, last_seen = ?1, updated_at = ?1,
				priority = CASE WHEN state IN (0, 1) THEN max(priority, min(priority + ?2, ?3)) ELSE priority END,
				next_at = CASE WHEN state IN (0, 1) THEN min(next_at, ?4) ELSE next_at END
			WHERE id = ?5 RETURNING state, priority, next_at`,
			now, q.Boost, q.MaxPriority, micros(q.PullTo), q.ID).Scan(&res.State, &res.Priority, &nextAt)
		if err == nil {
			res.NextAt = fromMicros(nextAt.Int64)
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if !q.AddIfMissing {
			return retry.ErrNotFound
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO retry_items
			(id, priority, state, ready, next_at, observations, last_seen, created_at, updated_at, payload)
			VALUES (?1, ?2, 0, 1, ?3, 1, ?3, ?3, ?3, ?4)`, q.ID, q.Priority, now, retryBlob(q.Payload))
		res = retry.ObserveResult{Added: true, State: retry.Pending, Priority: q.Priority, NextAt: q.Now}
		return err
	})
	if errors.Is(err, retry.ErrNotFound) {
		return retry.ObserveResult{}, err
	}
	if err != nil {
		return retry.ObserveResult{}, fmt.Errorf("sqlite: retry observe: %w", err)
	}
	return res, nil
}

// RetryGet implements retry.Store.
func (s *Store) RetryGet(ctx context.Context, id string) (retry.Item, error) {
	var it retry.Item
	var nextAt, lastSeen sql.NullInt64
	var created, updated int64
	var history string
	err := s.r.QueryRowContext(ctx, `SELECT id, priority, payload, state, next_at, coalesce(worker, ''),
		attempts, fails, expiries, coalesce(last_class, ''), coalesce(history, ''), observations, last_seen,
		created_at, updated_at FROM retry_items WHERE id = ?`, id).Scan(
		&it.ID, &it.Priority, &it.Payload, &it.State, &nextAt, &it.Worker,
		&it.Attempts, &it.Failures, &it.Expiries, &it.LastClass, &history, &it.Observations, &lastSeen,
		&created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return retry.Item{}, retry.ErrNotFound
	}
	if err != nil {
		return retry.Item{}, fmt.Errorf("sqlite: retry get: %w", err)
	}
	switch it.State {
	case retry.Pending, retry.Scheduled:
		it.NextAt = fromMicros(nextAt.Int64)
	case retry.Leased:
		it.LeaseUntil = fromMicros(nextAt.Int64)
	}
	if it.State != retry.Leased {
		it.Worker = ""
	}
	it.LastSeen = fromMicros(lastSeen.Int64)
	it.CreatedAt, it.UpdatedAt = fromMicros(created), fromMicros(updated)
	if it.History, err = retry.DecodeHistory([]byte(history)); err != nil {
		return retry.Item{}, fmt.Errorf("sqlite: retry get %q: %w", id, err)
	}
	return it, nil
}

// RetryStats implements retry.Store. It reads one snapshot.
func (s *Store) RetryStats(ctx context.Context, now time.Time) (retry.Stats, error) {
	st := retry.Stats{ByState: map[string]int{}, ByClass: map[string]int{}}
	for _, state := range retry.States {
		st.ByState[state.String()] = 0
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return retry.Stats{}, fmt.Errorf("sqlite: retry stats: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT state, coalesce(last_class, ''), count(*) FROM retry_items
		GROUP BY state, last_class`)
	if err != nil {
		return retry.Stats{}, fmt.Errorf("sqlite: retry stats: %w", err)
	}
	for rows.Next() {
		var state retry.State
		var class string
		var n int
		if err := rows.Scan(&state, &class, &n); err != nil {
			rows.Close()
			return retry.Stats{}, fmt.Errorf("sqlite: retry stats: %w", err)
		}
		st.Total += n
		st.ByState[state.String()] += n
		if state == retry.Scheduled && class != "" {
			st.ByClass[class] += n
		}
	}
	if err := rows.Close(); err != nil {
		return retry.Stats{}, fmt.Errorf("sqlite: retry stats: %w", err)
	}
	t := micros(now)
	oldest := int64(0)
	for _, q := range []string{
		`SELECT count(*), min(next_at) FROM retry_items WHERE ready = 1 AND state IN (0, 1) AND next_at <= ?`,
		`SELECT count(*), min(next_at) FROM retry_items WHERE ready = 0 AND next_at IS NOT NULL AND next_at <= ?`,
	} {
		var n int
		var min sql.NullInt64
		if err := tx.QueryRowContext(ctx, q, t).Scan(&n, &min); err != nil {
			return retry.Stats{}, fmt.Errorf("sqlite: retry stats: %w", err)
		}
		st.DueNow += n
		if min.Valid && (oldest == 0 || min.Int64 < oldest) {
			oldest = min.Int64
		}
	}
	if oldest != 0 {
		st.OldestDueLag = max(now.Sub(fromMicros(oldest)), 0)
	}
	return st, nil
}

// RetryForget implements retry.Store.
func (s *Store) RetryForget(ctx context.Context, id string) error {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM retry_items WHERE id = ?`, id)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: retry forget: %w", err)
	}
	if n == 0 {
		return retry.ErrNotFound
	}
	return nil
}

func retryFlag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func retryBlob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

func retryText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func retryHistory(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
