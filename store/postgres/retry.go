package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/jackc/pgx/v5"
)

// Compile-time proof that the store serves the retry scheduler.
var _ retry.Store = (*Store)(nil)

// RetryAdd implements retry.Store in one statement.
func (s *Store) RetryAdd(ctx context.Context, q retry.AddQuery) (retry.AddResult, error) {
	n := len(q.Items)
	ids := make([]string, n)
	prios := make([]int32, n)
	ats := make([]time.Time, n)
	payloads := make([][]byte, n)
	for i, it := range q.Items {
		ids[i], prios[i], ats[i] = it.ID, int32(it.Priority), it.NotBefore
		if len(it.Payload) > 0 {
			payloads[i] = it.Payload
		}
	}
	rows, err := s.pool.Query(ctx, `INSERT INTO retry_items AS t
			(id, priority, state, ready, next_at, created_at, updated_at, payload)
		SELECT u.id, u.priority, 0, u.next_at <= $1, u.next_at, $1, $1, u.payload
		FROM unnest($2::text[], $3::int[], $4::timestamptz[], $5::bytea[]) AS u(id, priority, next_at, payload)
		ORDER BY u.id
		ON CONFLICT (id) DO UPDATE SET priority = excluded.priority, updated_at = excluded.updated_at
			WHERE t.priority < excluded.priority
		RETURNING xmax = 0`, q.Now, ids, prios, ats, payloads)
	if err != nil {
		return retry.AddResult{}, fmt.Errorf("postgres: retry add: %w", err)
	}
	inserted, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return retry.AddResult{}, fmt.Errorf("postgres: retry add: %w", err)
	}
	var res retry.AddResult
	for _, ok := range inserted {
		if ok {
			res.Added++
		}
	}
	res.Existing = n - res.Added
	return res, nil
}

// retryPromoteSQL makes the oldest items whose time has come ready (see
// retry.ClaimQuery) and returns the leases that ran out once too often.
// SKIP LOCKED lets nodes promote side by side without waiting.
//
// Statements here that update rows found by a join also name the keys with
// id = ANY(...): without it the planner may join a few hundred keys to the
// table by hashing all of it (a generic plan cannot see how few keys come).
const retryPromoteSQL = `WITH due AS MATERIALIZED (
		SELECT id, state, expiries FROM retry_items
		WHERE NOT ready AND next_at IS NOT NULL AND next_at <= $1
		ORDER BY next_at LIMIT $2
		FOR UPDATE SKIP LOCKED),
	up AS (
		UPDATE retry_items t SET ready = true,
			expiries = CASE WHEN t.state = 2 THEN t.expiries + 1 ELSE t.expiries END,
			worker = CASE WHEN t.state = 2 THEN NULL ELSE t.worker END,
			state = CASE WHEN t.state = 2 THEN 1 ELSE t.state END,
			updated_at = $1
		WHERE t.id = ANY (ARRAY(SELECT id FROM due WHERE NOT (state = 2 AND expiries + 1 >= $3))))
	SELECT id FROM due WHERE state = 2 AND expiries + 1 >= $3`

// retryClaimSQL leases the best ready items in one statement. Both kinds of
// candidates are locked with SKIP LOCKED (at most N each), then the retry
// quota decides which of them are taken: pending ones up to N minus the
// retries that fit the quota, retries up to the quota or whatever room the
// pending ones leave.
const retryClaimSQL = `WITH r AS MATERIALIZED (
		SELECT id, priority, next_at FROM retry_items
		WHERE ready AND state = 1 AND next_at <= $1
		ORDER BY priority DESC, next_at LIMIT $2
		FOR UPDATE SKIP LOCKED),
	p AS MATERIALIZED (
		SELECT id, priority, next_at FROM retry_items
		WHERE ready AND state = 0 AND next_at <= $1
		ORDER BY priority DESC, next_at LIMIT $2
		FOR UPDATE SKIP LOCKED),
	pick AS (
		SELECT id, next_at, 0 AS was FROM (
			SELECT id, next_at, row_number() OVER (ORDER BY priority DESC, next_at) AS k FROM p) x
		WHERE k <= $2 - LEAST((SELECT count(*) FROM r), $3)
		UNION ALL
		SELECT id, next_at, 1 FROM (
			SELECT id, next_at, row_number() OVER (ORDER BY priority DESC, next_at) AS k FROM r) y
		WHERE k <= GREATEST($3, $2 - (SELECT count(*) FROM p)))
	UPDATE retry_items t SET state = 2, ready = false, next_at = $4, attempts = t.attempts + 1,
		lease_gen = nextval('retry_lease_gen'), worker = $5, updated_at = $1
	FROM pick WHERE t.id = pick.id AND t.id = ANY (ARRAY(SELECT id FROM pick))
	RETURNING t.id, t.lease_gen, t.attempts, t.fails, t.priority, coalesce(t.last_class, ''), t.payload,
		pick.next_at, pick.was`

// RetryClaim implements retry.Store: promotion and claim travel in one
// round trip and run in one implicit transaction.
func (s *Store) RetryClaim(ctx context.Context, q retry.ClaimQuery) (retry.ClaimResult, error) {
	until := q.Now.Add(q.Lease)
	var worker *string
	if q.Worker != "" {
		worker = &q.Worker
	}
	b := &pgx.Batch{}
	b.Queue(retryPromoteSQL, q.Now, int64(q.PromoteLimit), int64(q.MaxExpiries))
	b.Queue(retryClaimSQL, q.Now, int64(q.N), int64(q.RetryQuota), until, worker)
	br := s.pool.SendBatch(ctx, b)
	var res retry.ClaimResult
	err := func() error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if res.Expired, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		rows, err = br.Query()
		if err != nil {
			return err
		}
		res.Grants, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (retry.Grant, error) {
			g := retry.Grant{Until: until}
			var was int32
			err := row.Scan(&g.ID, &g.Gen, &g.Attempt, &g.Failures, &g.Priority, &g.LastClass, &g.Payload, &g.DueAt, &was)
			g.Was = retry.State(was)
			g.DueAt = g.DueAt.UTC()
			return g, err
		})
		return err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return retry.ClaimResult{}, fmt.Errorf("postgres: retry claim: %w", err)
	}
	slices.SortStableFunc(res.Grants, func(a, b retry.Grant) int {
		if a.Priority != b.Priority {
			return b.Priority - a.Priority
		}
		return a.DueAt.Compare(b.DueAt)
	})
	return res, nil
}

const retryRecordColumns = `id, priority, state, next_at, attempts, fails, expiries,
	coalesce(last_class, ''), coalesce(history, ''), coalesce(worker, ''),
	lease_gen, settled_gen, settled_op, updated_at`

func scanRetryRecord(row pgx.CollectableRow) (*retry.Record, error) {
	r := &retry.Record{}
	var state, expiries, op int16
	var nextAt *time.Time
	var history string
	if err := row.Scan(&r.ID, &r.Priority, &state, &nextAt, &r.Attempts, &r.Failures, &expiries,
		&r.LastClass, &history, &r.Worker, &r.LeaseGen, &r.SettledGen, &op, &r.UpdatedAt); err != nil {
		return nil, err
	}
	r.State, r.Expiries, r.SettledOp = retry.State(state), int(expiries), retry.Op(op)
	if nextAt != nil {
		r.NextAt = nextAt.UTC()
	}
	r.UpdatedAt = r.UpdatedAt.UTC()
	h, err := retry.DecodeHistory([]byte(history))
	if err != nil {
		return nil, fmt.Errorf("item %q: %w", r.ID, err)
	}
	r.History = h
	return r, nil
}

// RetryUpdate implements retry.Store. Rows are locked in id order, the
// same order every batch writer uses, so concurrent batches cannot deadlock.
func (s *Store) RetryUpdate(ctx context.Context, q retry.UpdateQuery) ([]error, error) {
	distinct := slices.Clone(q.IDs)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	var errs []error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		errs = make([]error, len(q.IDs))
		rows, err := tx.Query(ctx, `SELECT `+retryRecordColumns+` FROM retry_items
			WHERE id = ANY($1) ORDER BY id FOR UPDATE`, distinct)
		if err != nil {
			return err
		}
		recs, err := pgx.CollectRows(rows, scanRetryRecord)
		if err != nil {
			return err
		}
		byID := make(map[string]*retry.Record, len(recs))
		for _, r := range recs {
			byID[r.ID] = r
		}
		dirty := make(map[string]bool, len(recs))
		for i, id := range q.IDs {
			r := byID[id]
			if r == nil {
				errs[i] = retry.ErrNotFound
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
			prios, attempts, fails           []int32
			states, expiries, ops            []int16
			readies                          []bool
			nexts, updated                   []*time.Time
			gens, settled                    []int64
		)
		for _, r := range recs {
			if !dirty[r.ID] {
				continue
			}
			var next *time.Time
			if !r.NextAt.IsZero() {
				next = &r.NextAt
			}
			upd := r.UpdatedAt
			ids = append(ids, &r.ID)
			prios = append(prios, int32(r.Priority))
			states = append(states, int16(r.State))
			readies = append(readies, r.Ready(q.Now))
			nexts = append(nexts, next)
			attempts = append(attempts, int32(r.Attempts))
			fails = append(fails, int32(r.Failures))
			expiries = append(expiries, int16(r.Expiries))
			classes = append(classes, retryText(r.LastClass))
			histories = append(histories, retryText(string(retry.EncodeHistory(r.History))))
			workers = append(workers, retryText(r.Worker))
			gens = append(gens, r.LeaseGen)
			settled = append(settled, r.SettledGen)
			ops = append(ops, int16(r.SettledOp))
			updated = append(updated, &upd)
		}
		_, err = tx.Exec(ctx, `UPDATE retry_items t SET priority = u.priority, state = u.state, ready = u.ready,
				next_at = u.next_at, attempts = u.attempts, fails = u.fails, expiries = u.expiries,
				last_class = u.last_class, history = u.history, worker = u.worker, lease_gen = u.lease_gen,
				settled_gen = u.settled_gen, settled_op = u.settled_op, updated_at = u.updated_at
			FROM unnest($1::text[], $2::int[], $3::smallint[], $4::boolean[], $5::timestamptz[], $6::int[],
				$7::int[], $8::smallint[], $9::text[], $10::text[], $11::text[], $12::bigint[], $13::bigint[],
				$14::smallint[], $15::timestamptz[])
				AS u(id, priority, state, ready, next_at, attempts, fails, expiries, last_class, history, worker,
				lease_gen, settled_gen, settled_op, updated_at)
			WHERE t.id = u.id AND t.id = ANY ($1)`,
			ids, prios, states, readies, nexts, attempts, fails, expiries, classes, histories, workers,
			gens, settled, ops, updated)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: retry update: %w", err)
	}
	return errs, nil
}

// RetrySucceed implements retry.Store in one statement. The ids arrive
// sorted, and a nested loop over them locks rows in that order, the order
// every other batch writer uses.
func (s *Store) RetrySucceed(ctx context.Context, q retry.SucceedQuery) ([]bool, error) {
	rows, err := s.pool.Query(ctx, `UPDATE retry_items t SET state = 3, ready = false, next_at = NULL, fails = 0,
			expiries = 0, worker = NULL, settled_gen = u.gen, settled_op = 1, updated_at = $1
		FROM unnest($2::text[], $3::bigint[]) AS u(id, gen)
		WHERE t.id = u.id AND t.id = ANY ($2) AND t.lease_gen = u.gen AND t.settled_gen <> u.gen
		RETURNING t.id`, q.Now, q.IDs, q.Gens)
	if err != nil {
		return nil, fmt.Errorf("postgres: retry succeed: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: retry succeed: %w", err)
	}
	at := make(map[string]int, len(q.IDs))
	for i, id := range q.IDs {
		at[id] = i
	}
	done := make([]bool, len(q.IDs))
	for _, id := range ids {
		done[at[id]] = true
	}
	return done, nil
}

func retryText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

const retryObserveSet = `observations = t.observations + 1, last_seen = $1, updated_at = $1,
	priority = CASE WHEN t.state IN (0, 1) THEN GREATEST(t.priority, LEAST(t.priority + $2, $3)) ELSE t.priority END,
	next_at = CASE WHEN t.state IN (0, 1) THEN LEAST(t.next_at, $4) ELSE t.next_at END`

// RetryObserve implements retry.Store: one statement for the known ids;
// for unknown ones with AddIfMissing, an upsert, so that two nodes adding
// the same id at once both succeed.
func (s *Store) RetryObserve(ctx context.Context, q retry.ObserveQuery) ([]retry.ObserveResult, error) {
	scan := func(row pgx.CollectableRow) (retry.ObserveResult, error) {
		var r retry.ObserveResult
		var state int16
		var next *time.Time
		err := row.Scan(&r.ID, &r.Added, &state, &r.Priority, &next)
		r.State = retry.State(state)
		if next != nil {
			r.NextAt = next.UTC()
		}
		return r, err
	}
	rows, err := s.pool.Query(ctx, `UPDATE retry_items t SET `+retryObserveSet+`
		FROM unnest($5::text[]) AS u(id) WHERE t.id = u.id AND t.id = ANY ($5)
		RETURNING t.id, false, t.state, t.priority, t.next_at`,
		q.Now, int32(q.Boost), int32(q.MaxPriority), q.PullTo, q.IDs)
	if err != nil {
		return nil, fmt.Errorf("postgres: retry observe: %w", err)
	}
	seen, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("postgres: retry observe: %w", err)
	}
	byID := make(map[string]retry.ObserveResult, len(q.IDs))
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
			SELECT u.id, $6, 0, true, $1, 1, $1, $1, $1, $7 FROM unnest($5::text[]) AS u(id) ORDER BY u.id
			ON CONFLICT (id) DO UPDATE SET `+retryObserveSet+`
			RETURNING t.id, xmax = 0, t.state, t.priority, t.next_at`,
			q.Now, int32(q.Boost), int32(q.MaxPriority), q.PullTo, missing, int32(q.Priority), payload)
		if err != nil {
			return nil, fmt.Errorf("postgres: retry observe: %w", err)
		}
		added, err := pgx.CollectRows(rows, scan)
		if err != nil {
			return nil, fmt.Errorf("postgres: retry observe: %w", err)
		}
		for _, r := range added {
			byID[r.ID] = r
		}
	}
	out := make([]retry.ObserveResult, len(q.IDs))
	for i, id := range q.IDs {
		r, ok := byID[id]
		if !ok {
			r = retry.ObserveResult{ID: id, Unknown: true}
		}
		out[i] = r
	}
	return out, nil
}

// RetryGet implements retry.Store.
func (s *Store) RetryGet(ctx context.Context, id string) (retry.Item, error) {
	var it retry.Item
	var state, expiries int16
	var next, lastSeen *time.Time
	var history string
	err := s.pool.QueryRow(ctx, `SELECT id, priority, payload, state, next_at, coalesce(worker, ''),
		attempts, fails, expiries, coalesce(last_class, ''), coalesce(history, ''), observations, last_seen,
		created_at, updated_at FROM retry_items WHERE id = $1`, id).Scan(
		&it.ID, &it.Priority, &it.Payload, &state, &next, &it.Worker,
		&it.Attempts, &it.Failures, &expiries, &it.LastClass, &history, &it.Observations, &lastSeen,
		&it.CreatedAt, &it.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return retry.Item{}, retry.ErrNotFound
	}
	if err != nil {
		return retry.Item{}, fmt.Errorf("postgres: retry get: %w", err)
	}
	it.State, it.Expiries = retry.State(state), int(expiries)
	if next != nil {
		switch it.State {
		case retry.Pending, retry.Scheduled:
			it.NextAt = next.UTC()
		case retry.Leased:
			it.LeaseUntil = next.UTC()
		}
	}
	if it.State != retry.Leased {
		it.Worker = ""
	}
	if lastSeen != nil {
		it.LastSeen = lastSeen.UTC()
	}
	it.CreatedAt, it.UpdatedAt = it.CreatedAt.UTC(), it.UpdatedAt.UTC()
	if it.History, err = retry.DecodeHistory([]byte(history)); err != nil {
		return retry.Item{}, fmt.Errorf("postgres: retry get %q: %w", id, err)
	}
	return it, nil
}

// RetryStats implements retry.Store from one snapshot.
func (s *Store) RetryStats(ctx context.Context, now time.Time) (retry.Stats, error) {
	st := retry.Stats{ByState: map[string]int{}, ByClass: map[string]int{}}
	for _, state := range retry.States {
		st.ByState[state.String()] = 0
	}
	var oldest *time.Time
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
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
			st.Total += n
			st.ByState[retry.State(state).String()] += n
			if retry.State(state) == retry.Scheduled && class != "" {
				st.ByClass[class] += n
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, q := range []string{
			`SELECT count(*), min(next_at) FROM retry_items WHERE ready AND state IN (0, 1) AND next_at <= $1`,
			`SELECT count(*), min(next_at) FROM retry_items WHERE NOT ready AND next_at IS NOT NULL AND next_at <= $1`,
		} {
			var n int
			var min *time.Time
			if err := tx.QueryRow(ctx, q, now).Scan(&n, &min); err != nil {
				return err
			}
			st.DueNow += n
			if min != nil && (oldest == nil || min.Before(*oldest)) {
				oldest = min
			}
		}
		return nil
	})
	if err != nil {
		return retry.Stats{}, fmt.Errorf("postgres: retry stats: %w", err)
	}
	if oldest != nil {
		st.OldestDueLag = max(now.Sub(*oldest), 0)
	}
	return st, nil
}

// RetryForget implements retry.Store.
func (s *Store) RetryForget(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM retry_items WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("postgres: retry forget: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return retry.ErrNotFound
	}
	return nil
}
