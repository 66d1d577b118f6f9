package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hostguard/hostguard/internal/retrystore"
	"github.com/hostguard/hostguard/retry/retrydriver"
	"github.com/jackc/pgx/v5"
)

// Compile-time proof that the store serves the retry scheduler.
var (
	_ retrydriver.Store   = (*Store)(nil)
	_ retrydriver.Writers = (*Store)(nil)
)

// RetryAdd implements retrydriver.Store in one statement, which takes the rows
// in id order (see RetryUpdate).
func (s *Store) RetryAdd(ctx context.Context, q retrydriver.AddParams) (retrydriver.AddResult, error) {
	n := len(q.Items)
	ids := make([]string, n)
	prios := make([]int32, n)
	ats := make([]time.Time, n)
	payloads := make([][]byte, n)
	hosts := make([]*string, n)
	for i, it := range q.Items {
		ids[i], prios[i], ats[i] = it.ID, int32(it.Priority), it.NotBefore
		if len(it.Payload) > 0 {
			payloads[i] = it.Payload
		}
		hosts[i] = retryText(it.Host)
	}
	rows, err := s.pool.Query(ctx, `INSERT INTO retry_items AS t
			(id, priority, state, ready, next_at, created_at, updated_at, payload, host)
		SELECT u.id, u.priority, 0, u.next_at <= $1, u.next_at, $1, $1, u.payload, u.host
		FROM unnest($2::text[], $3::int[], $4::timestamptz[], $5::bytea[], $6::text[]) AS u(id, priority, next_at, payload, host)
		ORDER BY u.id COLLATE "C"
		ON CONFLICT (id) DO UPDATE SET priority = excluded.priority, updated_at = excluded.updated_at
			WHERE t.priority < excluded.priority
		RETURNING xmax = 0`, q.Now, ids, prios, ats, payloads, hosts)
	if err != nil {
		return retrydriver.AddResult{}, fmt.Errorf("postgres: retry add: %w", err)
	}
	inserted, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return retrydriver.AddResult{}, fmt.Errorf("postgres: retry add: %w", err)
	}
	var res retrydriver.AddResult
	for _, ok := range inserted {
		if ok {
			res.Added++
		}
	}
	if res.Added > 0 {
		s.retryChanged()
	}
	return res, nil
}

// retryClaimSQL calls retry_claim (migration 0015), which promotes and
// claims in one statement (see retrydriver.ClaimParams), so that a claim's transaction takes its locks on
// the counter rows (retry_counts, by the statement trigger) once and in key
// order. Two statements in one transaction, each locking counter rows at its
// end, deadlocked against other writers sharing a counter shard.
//
// due are the oldest not-ready items whose time has come; those of them
// whose lease ran out once too often (expired) are left for the scheduler,
// the others (woken) join the ready candidates in their lane: pending ones,
// and scheduled ones (an item whose lease ran out counts as scheduled).
// Both lanes are locked with SKIP LOCKED (at most N ready items each), so
// nodes claim side by side without waiting; then the retry quota decides
// which candidates are taken: pending ones up to N minus the retries that
// fit the quota, retries up to the quota or whatever room the pending ones
// leave. One UPDATE then writes every change: woken items not picked become
// ready, picked ones leased.
//
// Statements here that update rows found by a join also name the keys with
// id = ANY(...): without it the planner may join a few hundred keys to the
// table by hashing all of it (a generic plan cannot see how few keys come).
const retryClaimSQL = `SELECT * FROM retry_claim($1, $2, $3, $4, $5, $6, $7, $8)`

// RetryClaim implements retrydriver.Store in one statement.
func (s *Store) RetryClaim(ctx context.Context, q retrydriver.ClaimParams) (retrydriver.ClaimResult, error) {
	rows, err := s.pool.Query(ctx, retryClaimSQL, retryClaimArgs(q)...)
	if err != nil {
		return retrydriver.ClaimResult{}, fmt.Errorf("postgres: retry claim: %w", err)
	}
	res, err := scanRetryClaim(rows, q)
	if err != nil {
		return retrydriver.ClaimResult{}, fmt.Errorf("postgres: retry claim: %w", err)
	}
	return res, nil
}

func retryClaimArgs(q retrydriver.ClaimParams) []any {
	var worker *string
	if q.Worker != "" {
		worker = &q.Worker
	}
	return []any{q.Now, int64(q.N), int64(q.RetryQuota), q.Now.Add(q.Lease), worker,
		int64(q.PromoteLimit), int64(q.MaxExpiries), q.Keys}
}

// scanRetryClaim reads the rows of retryClaimSQL and closes them.
func scanRetryClaim(rows pgx.Rows, q retrydriver.ClaimParams) (retrydriver.ClaimResult, error) {
	until := q.Now.Add(q.Lease)
	var res retrydriver.ClaimResult
	var g retrydriver.Grant
	var dueAt *time.Time
	var was int32
	_, err := pgx.ForEachRow(rows, []any{&g.ID, &g.Gen, &g.Key, &g.Attempt, &g.Failures, &g.Priority, &g.LastClass, &g.Payload, &dueAt, &was}, func() error {
		if was < 0 {
			res.Expired = append(res.Expired, g.ID)
			return nil
		}
		g.Until, g.Was = until, retrydriver.State(was)
		if dueAt != nil {
			g.DueAt = dueAt.UTC()
		}
		res.Grants = append(res.Grants, g)
		g = retrydriver.Grant{}
		return nil
	})
	if err != nil {
		return retrydriver.ClaimResult{}, err
	}
	return res, nil
}

const retryRecordColumns = `id, priority, state, next_at, attempts, fails, expiries,
	coalesce(last_class, ''), history, sources, coalesce(worker, ''),
	lease_gen, coalesce(lease_key, ''), settled_gen, settled_op, observations, last_seen, created_at, updated_at,
	coalesce(host, '')`

func scanRetryRecord(row pgx.Row, extra ...any) (*retrydriver.Record, error) {
	r := &retrydriver.Record{}
	var state, expiries, op int16
	var nextAt, lastSeen *time.Time
	var history, sources *string
	if err := row.Scan(append([]any{&r.ID, &r.Priority, &state, &nextAt, &r.Attempts, &r.Failures, &expiries,
		&r.LastClass, &history, &sources, &r.Worker, &r.LeaseGen, &r.LeaseKey, &r.SettledGen, &op,
		&r.Observations, &lastSeen, &r.CreatedAt, &r.UpdatedAt, &r.Host}, extra...)...); err != nil {
		return nil, err
	}
	r.State, r.Expiries, r.SettledOp = retrydriver.State(state), int(expiries), retrydriver.Op(op)
	if nextAt != nil {
		r.NextAt = nextAt.UTC()
	}
	if lastSeen != nil {
		r.LastSeen = lastSeen.UTC()
	}
	if history != nil {
		r.History = []byte(*history)
	}
	if sources != nil {
		r.Sources = []byte(*sources)
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return r, nil
}

func collectRetryRecord(row pgx.CollectableRow) (*retrydriver.Record, error) {
	return scanRetryRecord(row)
}

// RetryUpdate implements retrydriver.Store. Rows are locked in id order, so
// concurrent batches cannot deadlock. A run that PostgreSQL aborts for
// the sake of another transaction is run again, Apply included, a few
// times (retryTxAttempts): the aborted run committed nothing.
//
// The retry store's lock order: every statement that takes several item
// rows takes them in the order of their ids' bytes, the order Go sorts
// them in, so that no two writers can each hold a row the other waits
// for. In SQL that is ORDER BY id COLLATE "C": a plain ORDER BY id (and a
// scan of the primary key) follows the database's collation, which,
// unless it is C, sorts "a_b" before "a-b" and "a" before "A". An update
// by join takes its rows in whatever order its plan reads them, so one
// that may have to wait for rows locks them first in a sorted subquery
// (observeKnown, RetrySucceed). All item rows come before counter rows
// (retry_counts), which the statement triggers take in key order at the
// end of each statement.
func (s *Store) RetryUpdate(ctx context.Context, q retrydriver.UpdateParams) (retrydriver.UpdateResult, error) {
	distinct := slices.Clone(q.IDs)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	var errs []error
	// waiting is whether a written record waits for a claim again.
	var waiting bool
	update := func(tx pgx.Tx) error {
		errs = make([]error, len(q.IDs))
		waiting = false
		inserted := map[string]bool{}
		if a := q.AddMissing; a != nil {
			// One statement takes every item row, in id order: it
			// inserts the missing ones and locks the others (an id
			// another transaction is inserting is waited for, then
			// locked). The locking read below then waits for nothing.
			// Its statement trigger takes the counter rows at its end,
			// after the items, as every writer does: an insert that
			// left the existing items to the locking read held counter
			// rows while it waited for them, and deadlocked against a
			// writer of the same counter shard that held one of them.
			// The conflict action updates nothing (WHERE false) but
			// locks the row; naming the key column makes that lock FOR
			// UPDATE, as strong as the locking read's.
			var payload []byte
			if len(a.Payload) > 0 {
				payload = a.Payload
			}
			rows, err := tx.Query(ctx, `INSERT INTO retry_items AS t
					(id, priority, state, ready, next_at, created_at, updated_at, payload, host)
				SELECT u.id, $2, 0, true, $3, $3, $3, $4, $5 FROM unnest($1::text[]) AS u(id) ORDER BY u.id COLLATE "C"
				ON CONFLICT (id) DO UPDATE SET id = excluded.id WHERE false
				RETURNING t.id`, distinct, int32(a.Priority), q.Now, payload, retryText(a.Host))
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, id := range ids {
				inserted[id] = true
			}
		}
		rows, err := tx.Query(ctx, `SELECT `+retryRecordColumns+` FROM retry_items
			WHERE id = ANY($1) ORDER BY id COLLATE "C" FOR UPDATE`, distinct)
		if err != nil {
			return err
		}
		recs, err := pgx.CollectRows(rows, collectRetryRecord)
		if err != nil {
			return err
		}
		byID := make(map[string]*retrydriver.Record, len(recs))
		for _, r := range recs {
			r.Inserted = inserted[r.ID]
			byID[r.ID] = r
		}
		dirty := make(map[string]bool, len(recs))
		for i, id := range q.IDs {
			r := byID[id]
			if r == nil {
				errs[i] = retrydriver.ErrNotFound
				continue
			}
			changed, err := q.Apply(i, r)
			if err != nil {
				errs[i] = err
				continue
			}
			dirty[id] = dirty[id] || changed
		}
		if len(dirty) == 0 {
			return nil
		}
		var (
			ids, classes, histories, workers []*string
			keys, srcs, hosts                []*string
			prios, attempts, fails, seen     []int32
			states, expiries, ops            []int16
			readies                          []bool
			nexts, lastSeen, updated         []*time.Time
			gens, settled                    []int64
		)
		for _, r := range recs {
			if !dirty[r.ID] {
				continue
			}
			waiting = waiting || retrystore.Wakes(r.State, r.NextAt, q.WakeBefore)
			upd := r.UpdatedAt
			ids = append(ids, &r.ID)
			prios = append(prios, int32(r.Priority))
			states = append(states, int16(r.State))
			readies = append(readies, r.Ready(q.Now))
			nexts = append(nexts, retryTime(r.NextAt))
			attempts = append(attempts, int32(r.Attempts))
			fails = append(fails, int32(r.Failures))
			expiries = append(expiries, int16(r.Expiries))
			classes = append(classes, retryText(r.LastClass))
			histories = append(histories, retryText(string(r.History)))
			workers = append(workers, retryText(r.Worker))
			gens = append(gens, r.LeaseGen)
			keys = append(keys, retryText(r.LeaseKey))
			srcs = append(srcs, retryText(string(r.Sources)))
			hosts = append(hosts, retryText(r.Host))
			settled = append(settled, r.SettledGen)
			ops = append(ops, int16(r.SettledOp))
			seen = append(seen, int32(r.Observations))
			lastSeen = append(lastSeen, retryTime(r.LastSeen))
			updated = append(updated, &upd)
		}
		const write = `UPDATE retry_items t SET priority = u.priority, state = u.state, ready = u.ready,
				next_at = u.next_at, attempts = u.attempts, fails = u.fails, expiries = u.expiries,
				last_class = u.last_class, history = u.history, worker = u.worker, lease_gen = u.lease_gen,
				settled_gen = u.settled_gen, settled_op = u.settled_op, observations = u.observations,
				last_seen = u.last_seen, updated_at = u.updated_at, lease_key = u.lease_key, sources = u.sources,
				host = u.host
			FROM unnest($1::text[], $2::int[], $3::smallint[], $4::boolean[], $5::timestamptz[], $6::int[],
				$7::int[], $8::smallint[], $9::text[], $10::text[], $11::text[], $12::bigint[], $13::bigint[],
				$14::smallint[], $15::int[], $16::timestamptz[], $17::timestamptz[], $18::text[], $19::text[], $20::text[])
				AS u(id, priority, state, ready, next_at, attempts, fails, expiries, last_class, history, worker,
				lease_gen, settled_gen, settled_op, observations, last_seen, updated_at, lease_key, sources, host)
			WHERE t.id = u.id AND t.id = ANY ($1)`
		args := []any{ids, prios, states, readies, nexts, attempts, fails, expiries, classes, histories, workers,
			gens, settled, ops, seen, lastSeen, updated, keys, srcs, hosts}
		// A write that inserted nothing may skip the flush wait, in the
		// same transaction (see observeKnown).
		if q.Lazy && len(inserted) == 0 {
			b := &pgx.Batch{}
			b.Queue(retryLazyCommitSQL)
			b.Queue(write, args...)
			return tx.SendBatch(ctx, b).Close()
		}
		_, err = tx.Exec(ctx, write, args...)
		return err
	}
	err := s.runTx(ctx, func() error { return pgx.BeginFunc(ctx, s.pool, update) })
	if err != nil {
		return retrydriver.UpdateResult{}, fmt.Errorf("postgres: retry update: %w", err)
	}
	if waiting {
		s.retryChanged()
	}
	return retrydriver.UpdateResult{Errs: errs}, nil
}

// retrySucceedSQL marks live leases done, on rows the transaction has
// locked already (RetrySucceedClaim) or on one row: an update by join takes its rows in
// its plan's order, which is the sorted ids' order for a nested loop over
// them but the collation's for a scan of the primary key.
const retrySucceedSQL = retrySucceedUpdate + `
	FROM unnest($2::text[], $3::text[]) AS u(id, token)
	WHERE ` + retrySucceedWhere

// retryLockSucceedSQL is retrySucceedSQL taking its rows in id order
// first (see RetryUpdate).
const retryLockSucceedSQL = `WITH l AS (SELECT id FROM retry_items WHERE id = ANY ($2) ORDER BY id COLLATE "C" FOR UPDATE)
	` + retrySucceedUpdate + `
	FROM l, unnest($2::text[], $3::text[]) AS u(id, token)
	WHERE t.id = l.id AND ` + retrySucceedWhere

const (
	retrySucceedUpdate = `UPDATE retry_items t SET state = 3, ready = false, next_at = NULL, fails = 0,
		expiries = 0, worker = NULL, settled_gen = t.lease_gen, settled_op = 1, updated_at = $1`
	retrySucceedWhere = `t.id = u.id AND t.id = ANY ($2) AND t.lease_key = u.token AND t.settled_gen <> t.lease_gen
	RETURNING t.id`
)

// RetrySucceed implements retrydriver.Store in one statement. A batch locks its
// rows in id order first, which cost the claim → succeed cycle of 100
// items about half as much again as the plain update (docs/benchmarks.md,
// "Retry lock order in byte order"); one id needs no order: a statement
// that locks a single row holds nothing while it waits for it.
func (s *Store) RetrySucceed(ctx context.Context, q retrydriver.SucceedParams) (retrydriver.SucceedResult, error) {
	sql := retryLockSucceedSQL
	if len(q.IDs) == 1 {
		sql = retrySucceedSQL
	}
	rows, err := s.pool.Query(ctx, sql, q.Now, q.IDs, q.Keys)
	if err != nil {
		return retrydriver.SucceedResult{}, fmt.Errorf("postgres: retry succeed: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return retrydriver.SucceedResult{}, fmt.Errorf("postgres: retry succeed: %w", err)
	}
	return retrydriver.SucceedResult{Done: retrySucceeded(q.IDs, ids)}, nil
}

// retrySucceeded says, per entry of ids, whether it is among marked.
func retrySucceeded(ids, marked []string) []bool {
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	done := make([]bool, len(ids))
	for _, id := range marked {
		done[at[id]] = true
	}
	return done
}

func retryText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// retryTime stores a zero time as NULL.
func retryTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

const retryObserveSet = `observations = t.observations + 1, last_seen = $1, updated_at = $1,
	priority = CASE WHEN t.state IN (0, 1) THEN GREATEST(t.priority, LEAST(t.priority + $2, $3)) ELSE t.priority END,
	next_at = CASE WHEN t.state IN (0, 1) THEN LEAST(t.next_at, $4) ELSE t.next_at END`

// RetryWriters implements retrydriver.Writers: writes run side by side, one
// per pooled connection, and PostgreSQL flushes concurrent commits together.
func (s *Store) RetryWriters() int { return int(s.pool.Config().MaxConns) }

// RetryObserve implements retrydriver.Store: one statement for the known ids;
// for unknown ones with AddIfMissing, an upsert, so that two nodes adding
// the same id at once both succeed.
func (s *Store) RetryObserve(ctx context.Context, q retrydriver.ObserveParams) (retrydriver.ObserveResult, error) {
	scan := func(row pgx.CollectableRow) (retrydriver.Observed, error) {
		var r retrydriver.Observed
		var state int16
		var next *time.Time
		err := row.Scan(&r.ID, &r.Added, &state, &r.Priority, &next)
		r.State = retrydriver.State(state)
		if next != nil {
			r.NextAt = next.UTC()
		}
		return r, err
	}
	seen, err := s.observeKnown(ctx, q, scan)
	if err != nil {
		return retrydriver.ObserveResult{}, fmt.Errorf("postgres: retry observe: %w", err)
	}
	byID := make(map[string]retrydriver.Observed, len(q.IDs))
	for _, r := range seen {
		byID[r.ID] = r
	}
	var missing []string
	for _, id := range q.IDs {
		if _, ok := byID[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 && q.AddIfMissing {
		var payload []byte
		if len(q.Payload) > 0 {
			payload = q.Payload
		}
		rows, err := s.pool.Query(ctx, `INSERT INTO retry_items AS t
				(id, priority, state, ready, next_at, observations, last_seen, created_at, updated_at, payload)
			SELECT u.id, $6, 0, true, $1, 1, $1, $1, $1, $7 FROM unnest($5::text[]) AS u(id) ORDER BY u.id COLLATE "C"
			ON CONFLICT (id) DO UPDATE SET `+retryObserveSet+`
			RETURNING t.id, xmax = 0, t.state, t.priority, t.next_at`,
			q.Now, int32(q.Boost), int32(q.MaxPriority), q.PullTo, missing, int32(q.Priority), payload)
		if err != nil {
			return retrydriver.ObserveResult{}, fmt.Errorf("postgres: retry observe: %w", err)
		}
		added, err := pgx.CollectRows(rows, scan)
		if err != nil {
			return retrydriver.ObserveResult{}, fmt.Errorf("postgres: retry observe: %w", err)
		}
		for _, r := range added {
			byID[r.ID] = r
		}
	}
	out := make([]retrydriver.Observed, len(q.IDs))
	for i, id := range q.IDs {
		r, ok := byID[id]
		if !ok {
			r = retrydriver.Observed{ID: id, Unknown: true}
		}
		out[i] = r
	}
	for _, r := range byID {
		if r.Added || retrystore.Wakes(r.State, r.NextAt, q.WakeBefore) {
			s.retryChanged()
			break
		}
	}
	return retrydriver.ObserveResult{Results: out}, nil
}

// observeKnown updates the rows of the ids that exist. A batch locks its
// rows in id order (see RetryUpdate) first: the update alone locks them
// in whatever order its plan reads them, and two nodes' overlapping
// batches then deadlock.
// The update repeats the ids as an index condition: joined only to the
// locked rows, the planner of a table without statistics read all of it
// for a batch of 1 000. One id needs neither: a statement that locks a
// single row holds nothing while it waits for it, so it cannot be part of
// a deadlock, and the plain update by key cost PostgreSQL 40 % less CPU
// than the locking one (docs/benchmarks.md, "One sighting, one row").
//
// A lazy sighting runs in the same implicit transaction as a set_config
// that turns synchronous_commit off for that transaction only: its commit
// then returns without waiting for the WAL flush, the wait that bounds
// what one caller can do (docs/design.md, "Sightings and the disk").
func (s *Store) observeKnown(ctx context.Context, q retrydriver.ObserveParams,
	scan pgx.RowToFunc[retrydriver.Observed]) ([]retrydriver.Observed, error) {
	sql, args := `WITH l AS (SELECT id FROM retry_items WHERE id = ANY ($5) ORDER BY id COLLATE "C" FOR UPDATE)
		UPDATE retry_items t SET `+retryObserveSet+`
		FROM l WHERE t.id = l.id AND t.id = ANY ($5)
		RETURNING t.id, false, t.state, t.priority, t.next_at`,
		[]any{q.Now, int32(q.Boost), int32(q.MaxPriority), q.PullTo, q.IDs}
	if len(q.IDs) == 1 {
		sql = `UPDATE retry_items t SET ` + retryObserveSet + `
			WHERE t.id = $5
			RETURNING t.id, false, t.state, t.priority, t.next_at`
		args[4] = q.IDs[0]
	}
	if !q.Lazy {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, scan)
	}
	b := &pgx.Batch{}
	b.Queue(retryLazyCommitSQL)
	b.Queue(sql, args...)
	br := s.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	var seen []retrydriver.Observed
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			seen, err = pgx.CollectRows(rows, scan)
		}
	}
	// Close reads through the commit: a commit that failed is an error
	// of this call, whatever the update returned.
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return seen, err
}

// retryLazyCommitSQL lets the commit of the transaction it runs in return
// before the WAL is flushed; is_local limits it to that transaction.
const retryLazyCommitSQL = `SELECT set_config('synchronous_commit', 'off', true)`

// RetryGet implements retrydriver.Store.
func (s *Store) RetryGet(ctx context.Context, q retrydriver.GetParams) (retrydriver.GetResult, error) {
	var payload []byte
	r, err := scanRetryRecord(s.pool.QueryRow(ctx, `SELECT `+retryRecordColumns+`, payload
		FROM retry_items WHERE id = $1`, q.ID), &payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return retrydriver.GetResult{}, retrydriver.ErrNotFound
	}
	if err != nil {
		return retrydriver.GetResult{}, fmt.Errorf("postgres: retry get: %w", err)
	}
	return retrydriver.GetResult{Record: *r, Payload: payload}, nil
}

// RetryStats implements retrydriver.Store from one snapshot.
func (s *Store) RetryStats(ctx context.Context, q retrydriver.StatsParams) (retrydriver.StatsResult, error) {
	var res retrydriver.StatsResult
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		res = retrydriver.StatsResult{}
		// The due counts read a short index range; starting parallel
		// workers for them (the planner is tempted when dead entries of
		// settled leases inflate its estimate) costs far more than the scan.
		if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT state, class, sum(n)::bigint FROM retry_counts
			GROUP BY state, class HAVING sum(n) <> 0`)
		if err != nil {
			return err
		}
		var state int16
		var class string
		var n int
		_, err = pgx.ForEachRow(rows, []any{&state, &class, &n}, func() error {
			res.Counts = append(res.Counts, retrydriver.Count{State: retrydriver.State(state), Class: class, N: n})
			return nil
		})
		if err != nil {
			return err
		}
		for _, sql := range []string{
			`SELECT count(*), min(next_at) FROM retry_items WHERE ready AND state IN (0, 1) AND next_at <= $1`,
			`SELECT count(*), min(next_at) FROM retry_items WHERE NOT ready AND next_at IS NOT NULL AND next_at <= $1 AND state IN (0, 1)`,
		} {
			var n int
			var min *time.Time
			if err := tx.QueryRow(ctx, sql, q.Now).Scan(&n, &min); err != nil {
				return err
			}
			res.DueNow += n
			if min != nil && (res.OldestDue.IsZero() || min.Before(res.OldestDue)) {
				res.OldestDue = min.UTC()
			}
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM retry_items
			WHERE NOT ready AND next_at IS NOT NULL AND next_at <= $1 AND state = 2`, q.Now).Scan(&res.LeasesExpired); err != nil {
			return err
		}
		if q.DueBounds != nil {
			due, err := retryDue(ctx, tx, q.DueBounds)
			if err != nil {
				return err
			}
			res.Due = &due
		}
		var prunedAt *time.Time
		if err := tx.QueryRow(ctx, `SELECT n, last_at FROM retry_pruned WHERE one = 0`).Scan(&res.Pruned, &prunedAt); err != nil {
			return err
		}
		if prunedAt != nil {
			res.PrunedAt = prunedAt.UTC()
		}
		var wokenAt *time.Time
		if err := tx.QueryRow(ctx, `SELECT events, n, last_at FROM retry_host_wakes WHERE one = 0`).Scan(&res.HostWakes, &res.HostWoken, &wokenAt); err != nil {
			return err
		}
		if wokenAt != nil {
			res.HostWokenAt = wokenAt.UTC()
		}
		return nil
	})
	if err != nil {
		return retrydriver.StatsResult{}, fmt.Errorf("postgres: retry stats: %w", err)
	}
	return res, nil
}

// RetryForget implements retrydriver.Store.
func (s *Store) RetryForget(ctx context.Context, q retrydriver.ForgetParams) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM retry_items WHERE id = $1`, q.ID)
	if err != nil {
		return fmt.Errorf("postgres: retry forget: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return retrydriver.ErrNotFound
	}
	return nil
}
