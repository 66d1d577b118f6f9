package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/internal/retrystore"
	"github.com/hostguard/hostguard/retry/retrydriver"
	"github.com/hostguard/hostguard/store/internal/fault"
)

// Compile-time proof that the store serves the retry scheduler.
var (
	_ retrydriver.Store          = (*Store)(nil)
	_ retrydriver.SucceedClaimer = (*Store)(nil)
)

// RetryAdd implements retrydriver.Store.
func (s *Store) RetryAdd(ctx context.Context, q retrydriver.AddParams) (retrydriver.AddResult, error) {
	var res retrydriver.AddResult
	now := micros(q.Now)
	st, err := s.stmts(ctx, retryInsertSQL, retryRaiseSQL)
	if err != nil {
		return retrydriver.AddResult{}, fmt.Errorf("sqlite: retry add: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		res = retrydriver.AddResult{}
		ins, raise := tx.StmtContext(ctx, st[0]), tx.StmtContext(ctx, st[1])
		for _, it := range q.Items {
			at := micros(it.NotBefore)
			r, err := ins.ExecContext(ctx, it.ID, it.Priority, retryFlag(at <= now), at, now, now, retryBlob(it.Payload), retryText(it.Host))
			if err != nil {
				return err
			}
			if n, err := r.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				res.Added++
				continue
			}
			if _, err := raise.ExecContext(ctx, it.Priority, now, it.ID, it.Priority); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return retrydriver.AddResult{}, fmt.Errorf("sqlite: retry add: %w", err)
	}
	if res.Added > 0 {
		s.retrySignal().Fire()
	}
	return res, nil
}

const (
	retryInsertSQL = `INSERT INTO retry_items
		(id, priority, state, ready, next_at, created_at, updated_at, payload, host)
		VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	retryRaiseSQL = `UPDATE retry_items SET priority = ?, updated_at = ? WHERE id = ? AND priority < ?`
	// retryDueSQL reads the oldest items waiting for a time that has come.
	retryDueSQL = `SELECT rid, id, state, expiries FROM retry_items
		WHERE ready = 0 AND next_at IS NOT NULL AND next_at <= ?
		ORDER BY next_at LIMIT ?`
	retryPromoteSQL = `UPDATE retry_items SET ready = 1,
			expiries = CASE state WHEN 2 THEN expiries + 1 ELSE expiries END,
			worker = CASE state WHEN 2 THEN NULL ELSE worker END,
			state = CASE state WHEN 2 THEN 1 ELSE state END,
			updated_at = ?
		WHERE rid IN (SELECT value FROM json_each(?))`
	// retryCandidatesSQL reads the best ready items of one state, through
	// the claim index.
	retryCandidatesSQL = `SELECT rid, priority, next_at FROM retry_items
		WHERE ready = 1 AND state = ? AND next_at <= ?
		ORDER BY priority DESC, next_at LIMIT ?`
	retrySeqSQL = `UPDATE retry_lease_seq SET gen = gen + ? WHERE one = 0 RETURNING gen`
	// retryLeaseSQL leases the picked rows, given as a JSON array of
	// [rid, token] pairs; each gets generation base+1, base+2, ... in the
	// array's order.
	retryLeaseSQL = `UPDATE retry_items SET state = 2, ready = 0, next_at = ?1,
			attempts = attempts + 1, lease_gen = ?2 + p.key + 1, lease_key = p.token, worker = ?3, updated_at = ?4
		FROM (SELECT key, value ->> 0 AS rid, value ->> 1 AS token FROM json_each(?5)) AS p
		WHERE retry_items.rid = p.rid
		RETURNING rid, id, attempts, fails, priority, coalesce(last_class, ''), payload, lease_gen, lease_key`
)

type retryCandidate struct {
	rid      int64
	priority int
	nextAt   int64
	state    retrydriver.State
}

// RetryClaim implements retrydriver.Store in one write transaction.
func (s *Store) RetryClaim(ctx context.Context, q retrydriver.ClaimParams) (retrydriver.ClaimResult, error) {
	var res retrydriver.ClaimResult
	st, err := s.stmts(ctx, retryDueSQL, retryPromoteSQL, retryCandidatesSQL, retrySeqSQL, retryLeaseSQL)
	if err != nil {
		return retrydriver.ClaimResult{}, fmt.Errorf("sqlite: retry claim: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = retryClaimTx(ctx, tx, st, q)
		return err
	})
	if err != nil {
		return retrydriver.ClaimResult{}, fmt.Errorf("sqlite: retry claim: %w", err)
	}
	return res, nil
}

// retryClaimTx is the claim inside tx, with st the statements RetryClaim
// prepares.
func retryClaimTx(ctx context.Context, tx *sql.Tx, st []*sql.Stmt, q retrydriver.ClaimParams) (retrydriver.ClaimResult, error) {
	now := micros(q.Now)
	var res retrydriver.ClaimResult
	err := func() error {
		expired, err := retryPromote(ctx, tx.StmtContext(ctx, st[0]), tx.StmtContext(ctx, st[1]), now, q.PromoteLimit, q.MaxExpiries)
		if err != nil {
			return err
		}
		res.Expired = expired
		var lanes [2][]retryCandidate
		cand := tx.StmtContext(ctx, st[2])
		for _, state := range []retrydriver.State{retrydriver.Pending, retrydriver.Scheduled} {
			rows, err := cand.QueryContext(ctx, state, now, q.N)
			if err != nil {
				return err
			}
			for rows.Next() {
				c := retryCandidate{state: state}
				if err := rows.Scan(&c.rid, &c.priority, &c.nextAt); err != nil {
					rows.Close()
					return err
				}
				lanes[state] = append(lanes[state], c)
			}
			if err := rows.Close(); err != nil {
				return err
			}
		}
		picks := retrystore.Pick(lanes[retrydriver.Pending], lanes[retrydriver.Scheduled], q.N, q.RetryQuota)
		if len(picks) == 0 {
			return nil
		}
		var last int64
		if err := tx.StmtContext(ctx, st[3]).QueryRowContext(ctx, len(picks)).Scan(&last); err != nil {
			return err
		}
		until := q.Now.Add(q.Lease)
		if len(q.Keys) < len(picks) {
			return fmt.Errorf("%d lease tokens for %d picked items", len(q.Keys), len(picks))
		}
		pairs := make([][2]any, len(picks))
		byRid := make(map[int64]int, len(picks))
		for i, c := range picks {
			pairs[i] = [2]any{c.rid, q.Keys[i]}
			byRid[c.rid] = i
		}
		list, _ := json.Marshal(pairs)
		rows, err := tx.StmtContext(ctx, st[4]).QueryContext(ctx, micros(until), last-int64(len(picks)), retryText(q.Worker), now, string(list))
		if err != nil {
			return err
		}
		res.Grants = make([]retrydriver.Grant, len(picks))
		n := 0
		for rows.Next() {
			var rid int64
			g := retrydriver.Grant{Until: until}
			if err := rows.Scan(&rid, &g.ID, &g.Attempt, &g.Failures, &g.Priority, &g.LastClass, &g.Payload, &g.Gen, &g.Key); err != nil {
				rows.Close()
				return err
			}
			i := byRid[rid]
			g.DueAt, g.Was = fromMicros(picks[i].nextAt), picks[i].state
			res.Grants[i] = g
			n++
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if n != len(picks) {
			return fmt.Errorf("leased %d of %d picked items", n, len(picks))
		}
		return nil
	}()
	return res, err
}

// retryPromote marks the oldest items whose time has come as ready (see
// retrydriver.ClaimParams) and returns the ids of leases that ran out once too
// often, which it leaves for the scheduler.
func retryPromote(ctx context.Context, due, promote *sql.Stmt, now int64, limit, maxExpiries int) ([]string, error) {
	rows, err := due.QueryContext(ctx, now, limit)
	if err != nil {
		return nil, err
	}
	var rids []int64
	var expired []string
	for rows.Next() {
		var rid int64
		var id string
		var state retrydriver.State
		var expiries int
		if err := rows.Scan(&rid, &id, &state, &expiries); err != nil {
			rows.Close()
			return nil, err
		}
		if state == retrydriver.Leased && expiries+1 >= maxExpiries {
			expired = append(expired, id)
			continue
		}
		rids = append(rids, rid)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if len(rids) == 0 {
		return expired, nil
	}
	list, _ := json.Marshal(rids)
	_, err = promote.ExecContext(ctx, now, string(list))
	return expired, err
}

const retryRecordColumns = `rid, id, priority, state, next_at, attempts, fails, expiries,
	coalesce(last_class, ''), history, sources, coalesce(worker, ''),
	lease_gen, coalesce(lease_key, ''), settled_gen, settled_op, observations, last_seen, created_at, updated_at,
	coalesce(host, '')`

type retryRow struct {
	rid   int64
	rec   retrydriver.Record
	dirty bool
}

func scanRetryRecord(sc interface{ Scan(...any) error }, row *retryRow, extra ...any) error {
	var nextAt, lastSeen sql.NullInt64
	var history, sources sql.NullString
	var created, updated int64
	r := &row.rec
	if err := sc.Scan(append([]any{&row.rid, &r.ID, &r.Priority, &r.State, &nextAt, &r.Attempts, &r.Failures, &r.Expiries,
		&r.LastClass, &history, &sources, &r.Worker, &r.LeaseGen, &r.LeaseKey, &r.SettledGen, &r.SettledOp,
		&r.Observations, &lastSeen, &created, &updated, &r.Host}, extra...)...); err != nil {
		return err
	}
	r.NextAt = fromMicros(nextAt.Int64)
	r.LastSeen = fromMicros(lastSeen.Int64)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(updated)
	if history.Valid {
		r.History = []byte(history.String)
	}
	if sources.Valid {
		r.Sources = []byte(sources.String)
	}
	return nil
}

const (
	retryLoadSQL = `SELECT ` + retryRecordColumns + ` FROM retry_items
		WHERE id IN (SELECT value FROM json_each(?))`
	retryWriteSQL = `UPDATE retry_items SET priority = ?, state = ?, ready = ?, next_at = ?,
		attempts = ?, fails = ?, expiries = ?, last_class = ?, history = ?, worker = ?,
		lease_gen = ?, lease_key = ?, settled_gen = ?, settled_op = ?, observations = ?, last_seen = ?, updated_at = ?,
		sources = ?, host = ?
		WHERE rid = ?`
)

// RetryUpdate implements retrydriver.Store in one write transaction.
func (s *Store) RetryUpdate(ctx context.Context, q retrydriver.UpdateParams) (retrydriver.UpdateResult, error) {
	var errs []error
	// waiting is whether a written record waits for a claim again.
	var waiting bool
	st, err := s.stmts(ctx, retryLoadSQL, retryWriteSQL, retryInsertSQL)
	if err != nil {
		return retrydriver.UpdateResult{}, fmt.Errorf("sqlite: retry update: %w", err)
	}
	list, _ := json.Marshal(q.IDs)
	err = s.tx(ctx, func(tx *sql.Tx) error {
		errs = make([]error, len(q.IDs))
		waiting = false
		inserted := map[string]bool{}
		if a := q.AddMissing; a != nil {
			ins, now := tx.StmtContext(ctx, st[2]), micros(q.Now)
			for _, id := range q.IDs {
				if inserted[id] {
					continue
				}
				r, err := ins.ExecContext(ctx, id, a.Priority, 1, now, now, now, retryBlob(a.Payload), retryText(a.Host))
				if err != nil {
					return err
				}
				if n, err := r.RowsAffected(); err != nil {
					return err
				} else if n == 1 {
					inserted[id] = true
					waiting = true
				}
			}
		}
		rows, err := tx.StmtContext(ctx, st[0]).QueryContext(ctx, string(list))
		if err != nil {
			return err
		}
		loaded := make(map[string]*retryRow, len(q.IDs))
		var order []*retryRow
		for rows.Next() {
			row := &retryRow{}
			if err := scanRetryRecord(rows, row); err != nil {
				rows.Close()
				return err
			}
			row.rec.Inserted = inserted[row.rec.ID]
			loaded[row.rec.ID] = row
			order = append(order, row)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for i, id := range q.IDs {
			row := loaded[id]
			if row == nil {
				errs[i] = retrydriver.ErrNotFound
				continue
			}
			changed, err := q.Apply(i, &row.rec)
			if err != nil {
				errs[i] = err
				continue
			}
			row.dirty = row.dirty || changed
		}
		up := tx.StmtContext(ctx, st[1])
		for _, row := range order {
			if !row.dirty {
				continue
			}
			r := &row.rec
			waiting = waiting || retrystore.Wakes(r.State, r.NextAt, q.WakeBefore)
			if _, err := up.ExecContext(ctx, r.Priority, r.State, retryFlag(r.Ready(q.Now)), retryTime(r.NextAt),
				r.Attempts, r.Failures, r.Expiries, retryText(r.LastClass), retryText(string(r.History)),
				retryText(r.Worker), r.LeaseGen, retryText(r.LeaseKey), r.SettledGen, r.SettledOp, r.Observations, retryTime(r.LastSeen),
				micros(r.UpdatedAt), retryText(string(r.Sources)), retryText(r.Host), row.rid); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return retrydriver.UpdateResult{}, fmt.Errorf("sqlite: retry update: %w", err)
	}
	if waiting {
		s.retrySignal().Fire()
	}
	return retrydriver.UpdateResult{Errs: errs}, nil
}

// retrySucceedSQL marks live leases done; the batch is a JSON array of
// [id, token] pairs.
const retrySucceedSQL = `UPDATE retry_items SET state = 3, ready = 0, next_at = NULL, fails = 0, expiries = 0,
		worker = NULL, settled_gen = lease_gen, settled_op = 1, updated_at = ?1
	FROM (SELECT value ->> 0 AS id, value ->> 1 AS token FROM json_each(?2)) AS p
	WHERE retry_items.id = p.id AND retry_items.lease_key = p.token AND retry_items.settled_gen <> retry_items.lease_gen
	RETURNING retry_items.id`

// RetrySucceed implements retrydriver.Store in one statement.
func (s *Store) RetrySucceed(ctx context.Context, q retrydriver.SucceedParams) (retrydriver.SucceedResult, error) {
	st, err := s.prepared(ctx, s.w, retrySucceedSQL)
	if err != nil {
		return retrydriver.SucceedResult{}, fmt.Errorf("sqlite: retry succeed: %w", err)
	}
	var done []bool
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		done, err = retrySucceedTx(ctx, tx, st, q)
		return err
	})
	if err != nil {
		return retrydriver.SucceedResult{}, fmt.Errorf("sqlite: retry succeed: %w", err)
	}
	return retrydriver.SucceedResult{Done: done}, nil
}

// retrySucceedTx runs retrySucceedSQL (prepared as st) inside tx and says
// which entries of q.IDs it marked done.
func retrySucceedTx(ctx context.Context, tx *sql.Tx, st *sql.Stmt, q retrydriver.SucceedParams) ([]bool, error) {
	pairs := make([][2]any, len(q.IDs))
	for i := range q.IDs {
		pairs[i] = [2]any{q.IDs[i], q.Keys[i]}
	}
	list, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, micros(q.Now), string(list))
	if err != nil {
		return nil, err
	}
	at := make(map[string]int, len(q.IDs))
	for i, id := range q.IDs {
		at[id] = i
	}
	done := make([]bool, len(q.IDs))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		done[at[id]] = true
	}
	return done, rows.Close()
}

// RetrySucceedClaim implements retrydriver.SucceedClaimer in one write
// transaction.
func (s *Store) RetrySucceedClaim(ctx context.Context, q retrydriver.SucceedClaimParams) (retrydriver.SucceedClaimResult, error) {
	st, err := s.stmts(ctx, retryDueSQL, retryPromoteSQL, retryCandidatesSQL, retrySeqSQL, retryLeaseSQL, retrySucceedSQL)
	if err != nil {
		return retrydriver.SucceedClaimResult{}, fmt.Errorf("sqlite: retry succeed and claim: %w", err)
	}
	var res retrydriver.SucceedClaimResult
	err = s.tx(ctx, func(tx *sql.Tx) error {
		res = retrydriver.SucceedClaimResult{}
		var err error
		if len(q.Succeed.IDs) > 0 {
			if res.Succeed.Done, err = retrySucceedTx(ctx, tx, st[5], q.Succeed); err != nil {
				return err
			}
		}
		if res.Claim, err = retryClaimTx(ctx, tx, st[:5], q.Claim); err != nil {
			return err
		}
		return fault.AfterLast(ctx)
	})
	if err != nil {
		return retrydriver.SucceedClaimResult{}, fmt.Errorf("sqlite: retry succeed and claim: %w", err)
	}
	return res, nil
}

const (
	retryObserveSQL = `UPDATE retry_items SET
			observations = observations + 1, last_seen = ?1, updated_at = ?1,
			priority = CASE WHEN state IN (0, 1) THEN max(priority, min(priority + ?2, ?3)) ELSE priority END,
			next_at = CASE WHEN state IN (0, 1) THEN min(next_at, ?4) ELSE next_at END
		WHERE id = ?5 RETURNING state, priority, next_at`
	retryObserveAddSQL = `INSERT INTO retry_items
			(id, priority, state, ready, next_at, observations, last_seen, created_at, updated_at, payload)
		VALUES (?1, ?2, 0, 1, ?3, 1, ?3, ?3, ?3, ?4)`
)

// RetryObserve implements retrydriver.Store in one write transaction.
func (s *Store) RetryObserve(ctx context.Context, q retrydriver.ObserveParams) (retrydriver.ObserveResult, error) {
	st, err := s.stmts(ctx, retryObserveSQL, retryObserveAddSQL)
	if err != nil {
		return retrydriver.ObserveResult{}, fmt.Errorf("sqlite: retry observe: %w", err)
	}
	now := micros(q.Now)
	res := make([]retrydriver.Observed, len(q.IDs))
	err = s.tx(ctx, func(tx *sql.Tx) error {
		up, add := tx.StmtContext(ctx, st[0]), tx.StmtContext(ctx, st[1])
		for i, id := range q.IDs {
			r := retrydriver.Observed{ID: id}
			var nextAt sql.NullInt64
			err := up.QueryRowContext(ctx, now, q.Boost, q.MaxPriority, micros(q.PullTo), id).Scan(&r.State, &r.Priority, &nextAt)
			switch {
			case err == nil:
				r.NextAt = fromMicros(nextAt.Int64)
			case !errors.Is(err, sql.ErrNoRows):
				return err
			case q.AddIfMissing:
				if _, err := add.ExecContext(ctx, id, q.Priority, now, retryBlob(q.Payload)); err != nil {
					return err
				}
				r = retrydriver.Observed{ID: id, Added: true, State: retrydriver.Pending, Priority: q.Priority, NextAt: q.Now}
			default:
				r.Unknown = true
			}
			res[i] = r
		}
		return nil
	})
	if err != nil {
		return retrydriver.ObserveResult{}, fmt.Errorf("sqlite: retry observe: %w", err)
	}
	for _, r := range res {
		if r.Added || retrystore.Wakes(r.State, r.NextAt, q.WakeBefore) {
			s.retrySignal().Fire()
			break
		}
	}
	return retrydriver.ObserveResult{Results: res}, nil
}

// RetryGet implements retrydriver.Store.
func (s *Store) RetryGet(ctx context.Context, q retrydriver.GetParams) (retrydriver.GetResult, error) {
	var res retrydriver.GetResult
	var row retryRow
	err := scanRetryRecord(s.r.QueryRowContext(ctx, `SELECT `+retryRecordColumns+`, payload
		FROM retry_items WHERE id = ?`, q.ID), &row, &res.Payload)
	if errors.Is(err, sql.ErrNoRows) {
		return retrydriver.GetResult{}, retrydriver.ErrNotFound
	}
	if err != nil {
		return retrydriver.GetResult{}, fmt.Errorf("sqlite: retry get: %w", err)
	}
	res.Record = row.rec
	return res, nil
}

// RetryStats implements retrydriver.Store. It reads one snapshot.
func (s *Store) RetryStats(ctx context.Context, q retrydriver.StatsParams) (retrydriver.StatsResult, error) {
	res, err := s.retryStats(ctx, micros(q.Now), q.DueBounds)
	if err != nil {
		return retrydriver.StatsResult{}, fmt.Errorf("sqlite: retry stats: %w", err)
	}
	return res, nil
}

func (s *Store) retryStats(ctx context.Context, now int64, bounds []time.Time) (retrydriver.StatsResult, error) {
	var res retrydriver.StatsResult
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return res, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT state, class, n FROM retry_counts WHERE n <> 0`)
	if err != nil {
		return res, err
	}
	for rows.Next() {
		var c retrydriver.Count
		if err := rows.Scan(&c.State, &c.Class, &c.N); err != nil {
			rows.Close()
			return res, err
		}
		res.Counts = append(res.Counts, c)
	}
	if err := rows.Close(); err != nil {
		return res, err
	}
	oldest := int64(0)
	for _, q := range []string{
		`SELECT count(*), min(next_at) FROM retry_items WHERE ready = 1 AND state IN (0, 1) AND next_at <= ?`,
		`SELECT count(*), min(next_at) FROM retry_items WHERE ready = 0 AND next_at IS NOT NULL AND next_at <= ? AND state IN (0, 1)`,
	} {
		var n int
		var min sql.NullInt64
		if err := tx.QueryRowContext(ctx, q, now).Scan(&n, &min); err != nil {
			return res, err
		}
		res.DueNow += n
		if min.Valid && (oldest == 0 || min.Int64 < oldest) {
			oldest = min.Int64
		}
	}
	if oldest != 0 {
		res.OldestDue = fromMicros(oldest)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM retry_items
		WHERE ready = 0 AND next_at IS NOT NULL AND next_at <= ? AND state = 2`, now).Scan(&res.LeasesExpired); err != nil {
		return res, err
	}
	if bounds != nil {
		due, err := retryDue(ctx, tx, bounds)
		if err != nil {
			return res, err
		}
		res.Due = &due
	}
	var prunedAt sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT n, last_at FROM retry_pruned WHERE one = 0`).Scan(&res.Pruned, &prunedAt); err != nil {
		return res, err
	}
	res.PrunedAt = fromMicros(prunedAt.Int64)
	var wokenAt sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT events, n, last_at FROM retry_host_wakes WHERE one = 0`).Scan(&res.HostWakes, &res.HostWoken, &wokenAt); err != nil {
		return res, err
	}
	res.HostWokenAt = fromMicros(wokenAt.Int64)
	return res, nil
}

// RetryForget implements retrydriver.Store.
func (s *Store) RetryForget(ctx context.Context, q retrydriver.ForgetParams) error {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM retry_items WHERE id = ?`, q.ID)
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
		return retrydriver.ErrNotFound
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

// retryTime stores a zero time as NULL.
func retryTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return micros(t)
}
