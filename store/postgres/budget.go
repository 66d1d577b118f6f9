package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/budget/budgetdriver"
	"github.com/hostguard/hostguard/internal/budgetstore"
	"github.com/jackc/pgx/v5"
)

// BudgetAdmit implements budgetdriver.Store. One transaction locks the batch's
// counters and pacing slots (SELECT ... ORDER BY ... FOR UPDATE, in byte
// order like budgetstore.LedgerKeys: every batch of every node, and every
// cancel, locks in the same order, so none can deadlock), decides
// the admissions with a budgetstore.Ledger, and writes the new values back. Rows
// that do not exist yet are first created in a statement of their own, so
// that the locking transaction only ever waits for locks in order.
func (s *Store) BudgetAdmit(ctx context.Context, batch []budgetdriver.AdmitParams) ([]budgetdriver.AdmitResult, error) {
	keys, slots := budgetstore.LedgerKeys(batch)
	days, scopes, kinds := make([]time.Time, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		days[i], scopes[i], kinds[i] = k.Day, k.Scope, string(k.Kind)
	}
	for attempt := 0; ; attempt++ {
		out, complete, err := s.budgetAdmitLocked(ctx, batch, keys, slots, days, scopes, kinds)
		if err != nil || complete {
			return out, err
		}
		if attempt == 3 {
			// Only a concurrent prune of today's rows could get here.
			return nil, errors.New("postgres: admit: budget rows keep disappearing")
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO budget_usage (day, scope, kind, used)
			SELECT k.day, k.scope, k.kind, budget_initial(k.day, k.scope, k.kind)
			  FROM unnest($1::date[], $2::text[], $3::text[]) AS k(day, scope, kind)
			 ORDER BY k.day, k.scope COLLATE "C", k.kind COLLATE "C"
			ON CONFLICT DO NOTHING`, days, scopes, kinds)
		b.Queue(`INSERT INTO budget_pace (source, next_at)
			SELECT k.source, 'epoch' FROM unnest($1::text[]) AS k(source) ORDER BY k.source COLLATE "C"
			ON CONFLICT DO NOTHING`, slots)
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return nil, fmt.Errorf("postgres: admit: create counters: %w", err)
		}
	}
}

// budgetAdmitLocked is one attempt of BudgetAdmit; complete is false when a
// counter or slot row is missing (and nothing was changed).
func (s *Store) budgetAdmitLocked(ctx context.Context, batch []budgetdriver.AdmitParams, keys []budgetstore.CounterKey, slots []string,
	days []time.Time, scopes, kinds []string) (out []budgetdriver.AdmitResult, complete bool, err error) {
	// BEGIN travels with the locking reads, and COMMIT with the writes:
	// two round trips in all, so that the rows stay locked for one round
	// trip and the commit's sync.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("postgres: admit: %w", err)
	}
	defer conn.Release()
	open := true
	defer func() {
		if open {
			if _, rerr := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
				// The connection's state is unknown: do not reuse it.
				_ = conn.Conn().Close(context.WithoutCancel(ctx))
			}
		}
	}()

	l := budgetstore.NewLedger()
	found := 0
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`SELECT k.i, u.used, u.closed_until
		  FROM budget_usage u
		  JOIN unnest($1::date[], $2::text[], $3::text[]) WITH ORDINALITY AS k(day, scope, kind, i)
		    ON u.day = k.day AND u.scope = k.scope AND u.kind = k.kind
		 ORDER BY u.day, u.scope COLLATE "C", u.kind COLLATE "C"
		   FOR UPDATE OF u`, days, scopes, kinds).Query(func(rows pgx.Rows) error {
		var i, used int64
		var closed *time.Time
		_, err := pgx.ForEachRow(rows, []any{&i, &used, &closed}, func() error {
			var until time.Time
			if closed != nil {
				until = closed.UTC()
			}
			l.PutCounter(keys[i-1], used, until)
			found++
			return nil
		})
		return err
	})
	b.Queue(`SELECT source, next_at FROM budget_pace WHERE source = ANY($1) ORDER BY source COLLATE "C" FOR UPDATE`, slots).
		Query(func(rows pgx.Rows) error {
			var src string
			var next time.Time
			_, err := pgx.ForEachRow(rows, []any{&src, &next}, func() error {
				l.PutSlot(src, next)
				found++
				return nil
			})
			return err
		})
	// The settings generation, read after the locks are held: a change
	// committed before this batch locked its rows is seen.
	gen := int64(0)
	b.Queue(`SELECT generation FROM budget_settings WHERE id = 1`).Query(func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&gen}, func() error { return nil })
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, false, fmt.Errorf("postgres: admit: lock counters: %w", err)
	}
	l.PutSettings(gen)
	if found < len(keys)+len(slots) {
		return nil, false, nil
	}

	out = make([]budgetdriver.AdmitResult, len(batch))
	for i, p := range batch {
		out[i] = l.Admit(p)
	}
	w := &pgx.Batch{}
	if cs := l.Counters(); len(cs) > 0 {
		d, sc, k, u := make([]time.Time, len(cs)), make([]string, len(cs)), make([]string, len(cs)), make([]int64, len(cs))
		for i, c := range cs {
			d[i], sc[i], k[i], u[i] = c.Day, c.Scope, string(c.Kind), c.Used
		}
		w.Queue(`UPDATE budget_usage u SET used = v.used
			  FROM unnest($1::date[], $2::text[], $3::text[], $4::bigint[]) AS v(day, scope, kind, used)
			 WHERE u.day = v.day AND u.scope = v.scope AND u.kind = v.kind`, d, sc, k, u)
	}
	if ss := l.Slots(); len(ss) > 0 {
		src, next := make([]string, len(ss)), make([]time.Time, len(ss))
		for i, sl := range ss {
			src[i], next[i] = sl.Key, sl.Next
		}
		w.Queue(`UPDATE budget_pace p SET next_at = v.next
			  FROM unnest($1::text[], $2::timestamptz[]) AS v(source, next)
			 WHERE p.source = v.source`, src, next)
	}
	var gid, gsrc, gkind []string
	var gday, gat []time.Time
	var gcost []int64
	for i, p := range batch {
		if g := p.Grant; g != nil && out[i].Admitted {
			gid, gday, gsrc, gkind = append(gid, g.ID), append(gday, g.Day), append(gsrc, g.Source), append(gkind, string(g.Kind))
			gcost, gat = append(gcost, g.Cost), append(gat, g.CreatedAt)
		}
	}
	if len(gid) > 0 {
		w.Queue(`INSERT INTO budget_grants (id, day, source, kind, cost, created_at)
			SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[])`,
			gid, gday, gsrc, gkind, gcost, gat)
	}
	w.Queue("COMMIT")
	if err := conn.SendBatch(ctx, w).Close(); err != nil {
		return nil, false, fmt.Errorf("postgres: admit: write counters: %w", err)
	}
	open = false
	for i := range out {
		out[i].Slot = out[i].Slot.UTC()
	}
	return out, true, nil
}

// BudgetCancel implements budgetdriver.Store.
func (s *Store) BudgetCancel(ctx context.Context, p budgetdriver.CancelParams) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, c := range p.Charges {
			if err := budgetAdjust(ctx, tx, p.Day, c.Scope, c.Kind, -c.Cost, false); err != nil {
				return fmt.Errorf("postgres: refund usage: %w", err)
			}
		}
		if p.PaceKey != "" {
			if _, err := tx.Exec(ctx, `UPDATE budget_pace SET next_at = $2 WHERE source = $1 AND next_at = $3`,
				p.PaceKey, p.Slot, p.Slot.Add(p.Pace)); err != nil {
				return fmt.Errorf("postgres: give back pacing slot: %w", err)
			}
		}
		if p.GrantID != "" {
			if _, err := tx.Exec(ctx, `DELETE FROM budget_grants WHERE id = $1`, p.GrantID); err != nil {
				return fmt.Errorf("postgres: drop grant: %w", err)
			}
		}
		return nil
	})
}

// BudgetSettle implements budgetdriver.Store. The grant row is locked first; its
// counters are then adjusted in (scope, kind) order like any admission.
func (s *Store) BudgetSettle(ctx context.Context, p budgetdriver.SettleParams) (budgetdriver.Grant, error) {
	var g budgetdriver.Grant
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var kind string
		var closedAt *time.Time
		err := tx.QueryRow(ctx, `SELECT day, source, kind, cost, actual, created_at, closed_at
			FROM budget_grants WHERE id = $1 FOR UPDATE`, p.ID).
			Scan(&g.Day, &g.Source, &kind, &g.Cost, &g.Actual, &g.CreatedAt, &closedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return budgetdriver.ErrGrantNotFound
		}
		if err != nil {
			return fmt.Errorf("postgres: read grant: %w", err)
		}
		g.ID, g.Kind, g.CreatedAt = p.ID, budgetdriver.Kind(kind), g.CreatedAt.UTC()
		g.Day = time.Date(g.Day.Year(), g.Day.Month(), g.Day.Day(), 0, 0, 0, 0, time.UTC)
		if closedAt != nil {
			g.ClosedAt = closedAt.UTC()
		}
		if g.Actual != nil {
			if *g.Actual == p.Actual {
				return nil
			}
			return budgetdriver.ErrGrantClosed
		}
		if g.Day.Before(p.Today) {
			return budgetdriver.ErrGrantExpired
		}
		scopes := []string{""}
		if g.Source != "" {
			scopes = append(scopes, g.Source)
		}
		for _, scope := range scopes {
			if err := budgetAdjust(ctx, tx, g.Day, scope, g.Kind, budgetstore.SettleDelta(g.Cost, p.Actual), true); err != nil {
				return fmt.Errorf("postgres: adjust usage: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE budget_grants SET actual = $2, closed_at = $3 WHERE id = $1`, p.ID, p.Actual, p.Now); err != nil {
			return fmt.Errorf("postgres: close grant: %w", err)
		}
		g.Actual, g.ClosedAt = &p.Actual, p.Now
		return nil
	})
	return g, err
}

// budgetAdjust changes a counter by delta through budgetstore.Adjust, so
// that it stays within 0..budget.MaxAmount: the row is created if needed
// (when create is set) and locked, and the new figure computed here, not in
// SQL, where bigint arithmetic would fail on overflow. A missing counter is
// left alone when create is not set.
func budgetAdjust(ctx context.Context, tx pgx.Tx, day time.Time, scope string, kind budgetdriver.Kind, delta int64, create bool) error {
	if create {
		if _, err := tx.Exec(ctx, `INSERT INTO budget_usage (day, scope, kind, used)
			VALUES ($1, $2, $3, budget_initial($1, $2, $3)) ON CONFLICT DO NOTHING`, day, scope, string(kind)); err != nil {
			return err
		}
	}
	var used int64
	err := tx.QueryRow(ctx, `SELECT used FROM budget_usage WHERE day = $1 AND scope = $2 AND kind = $3 FOR UPDATE`,
		day, scope, string(kind)).Scan(&used)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE budget_usage SET used = $4 WHERE day = $1 AND scope = $2 AND kind = $3`,
		day, scope, string(kind), budgetstore.Adjust(used, delta))
	return err
}

// BudgetClose implements budgetdriver.Store.
func (s *Store) BudgetClose(ctx context.Context, p budgetdriver.CloseParams) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO budget_usage AS u (day, scope, kind, used, closed_until)
		VALUES ($1, $2, $3, budget_initial($1, $2, $3), $4)
		ON CONFLICT (day, scope, kind) DO UPDATE SET closed_until = GREATEST(u.closed_until, excluded.closed_until)`,
		p.Day, p.Scope, string(p.Kind), p.Until)
	if err != nil {
		return fmt.Errorf("postgres: close counter: %w", err)
	}
	return nil
}

// BudgetUsage implements budgetdriver.Store.
func (s *Store) BudgetUsage(ctx context.Context, day time.Time) ([]budgetdriver.Counter, error) {
	rows, err := s.pool.Query(ctx, `SELECT scope, kind, used, closed_until FROM budget_usage WHERE day = $1`, day)
	if err != nil {
		return nil, fmt.Errorf("postgres: read usage: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (budgetdriver.Counter, error) {
		var c budgetdriver.Counter
		var kind string
		var closed *time.Time
		err := r.Scan(&c.Scope, &kind, &c.Used, &closed)
		c.Kind = budgetdriver.Kind(kind)
		if closed != nil {
			c.ClosedUntil = closed.UTC()
		}
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read usage: %w", err)
	}
	return out, nil
}

// BudgetPrune implements budgetdriver.Store.
func (s *Store) BudgetPrune(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, q := range []string{
			`DELETE FROM budget_usage WHERE day < $1`,
			`DELETE FROM budget_grants WHERE day < $1`,
			`DELETE FROM budget_pace WHERE next_at < $1`,
		} {
			tag, err := tx.Exec(ctx, q, before)
			if err != nil {
				return fmt.Errorf("postgres: prune budget: %w", err)
			}
			n += tag.RowsAffected()
		}
		return nil
	})
	return n, err
}

// BudgetSettings implements budgetdriver.SettingsStore.
func (s *Store) BudgetSettings(ctx context.Context) (budgetdriver.Settings, error) {
	var out budgetdriver.Settings
	err := s.pool.QueryRow(ctx, `SELECT generation, doc FROM budget_settings WHERE id = 1`).Scan(&out.Generation, &out.Doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return budgetdriver.Settings{}, nil
	}
	if err != nil {
		return budgetdriver.Settings{}, fmt.Errorf("postgres: read budget settings: %w", err)
	}
	return out, nil
}

// BudgetPutSettings implements budgetdriver.SettingsStore: one conditional
// UPDATE, so concurrent changes from several nodes are compare-and-set.
func (s *Store) BudgetPutSettings(ctx context.Context, p budgetdriver.PutSettingsParams) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE budget_settings SET generation = generation + 1, doc = $1, updated_at = $2
		WHERE id = 1 AND generation = $3`, p.Doc, p.Now, p.Prev)
	if err != nil {
		return false, fmt.Errorf("postgres: store budget settings: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
