package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/jackc/pgx/v5"
)

// BudgetAdmit implements budget.Store with one call of the budget_admit
// function (migration 0004), which locks the counters in the order the
// charges come in, checks them, takes the pacing slot and adds the costs,
// all in one statement's transaction.
func (s *Store) BudgetAdmit(ctx context.Context, p budget.StoreAdmitParams) (budget.StoreAdmitResult, error) {
	n := len(p.Charges)
	scopes, kinds := make([]string, n), make([]string, n)
	costs, limits := make([]int64, n), make([]int64, n)
	for i, c := range p.Charges {
		scopes[i], kinds[i], costs[i], limits[i] = c.Scope, string(c.Kind), c.Cost, -1
		if c.Limited {
			limits[i] = c.Limit
		}
	}
	var gid, gsrc, gkind string
	var gcost int64
	if g := p.Grant; g != nil {
		gid, gsrc, gkind, gcost = g.ID, g.Source, string(g.Kind), g.Cost
	}
	var res budget.StoreAdmitResult
	var slot *time.Time
	err := s.pool.QueryRow(ctx, `SELECT o_admitted, o_refused, o_used, o_closed, o_slot
		FROM budget_admit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		p.Day, p.Now, scopes, kinds, costs, limits,
		p.PaceKey, p.Pace.Microseconds(), p.MaxWait.Microseconds(), p.Touch,
		gid, gsrc, gkind, gcost,
	).Scan(&res.Admitted, &res.Refused, &res.Used, &res.Closed, &slot)
	if err != nil {
		return budget.StoreAdmitResult{}, fmt.Errorf("postgres: admit: %w", err)
	}
	if slot != nil {
		res.Slot = slot.UTC()
	}
	return res, nil
}

// BudgetCancel implements budget.Store.
func (s *Store) BudgetCancel(ctx context.Context, p budget.StoreCancelParams) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, c := range p.Charges {
			if _, err := tx.Exec(ctx, `UPDATE budget_usage SET used = used - $4 WHERE day = $1 AND scope = $2 AND kind = $3`,
				p.Day, c.Scope, string(c.Kind), c.Cost); err != nil {
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

// BudgetSettle implements budget.Store. The grant row is locked first; its
// counters are then adjusted in (scope, kind) order like any admission.
func (s *Store) BudgetSettle(ctx context.Context, p budget.StoreSettleParams) (budget.StoreGrant, error) {
	var g budget.StoreGrant
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var kind string
		var closedAt *time.Time
		err := tx.QueryRow(ctx, `SELECT day, source, kind, cost, actual, created_at, closed_at
			FROM budget_grants WHERE id = $1 FOR UPDATE`, p.ID).
			Scan(&g.Day, &g.Source, &kind, &g.Cost, &g.Actual, &g.CreatedAt, &closedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return budget.ErrGrantNotFound
		}
		if err != nil {
			return fmt.Errorf("postgres: read grant: %w", err)
		}
		g.ID, g.Kind, g.CreatedAt = p.ID, budget.Kind(kind), g.CreatedAt.UTC()
		g.Day = time.Date(g.Day.Year(), g.Day.Month(), g.Day.Day(), 0, 0, 0, 0, time.UTC)
		if closedAt != nil {
			g.ClosedAt = closedAt.UTC()
		}
		if g.Actual != nil {
			if *g.Actual == p.Actual {
				return nil
			}
			return budget.ErrGrantClosed
		}
		if g.Day.Before(p.Today) {
			return budget.ErrGrantExpired
		}
		scopes := []string{""}
		if g.Source != "" {
			scopes = append(scopes, g.Source)
		}
		for _, scope := range scopes {
			if _, err := tx.Exec(ctx, `INSERT INTO budget_usage AS u (day, scope, kind, used) VALUES ($1, $2, $3, $4)
				ON CONFLICT (day, scope, kind) DO UPDATE SET used = u.used + excluded.used`,
				g.Day, scope, kind, p.Actual-g.Cost); err != nil {
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

// BudgetClose implements budget.Store.
func (s *Store) BudgetClose(ctx context.Context, p budget.StoreCloseParams) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO budget_usage AS u (day, scope, kind, used, closed)
		VALUES ($1, $2, $3, budget_initial($1, $2, $3), true)
		ON CONFLICT (day, scope, kind) DO UPDATE SET closed = true`, p.Day, p.Scope, string(p.Kind))
	if err != nil {
		return fmt.Errorf("postgres: close counter: %w", err)
	}
	return nil
}

// BudgetUsage implements budget.Store.
func (s *Store) BudgetUsage(ctx context.Context, day time.Time) ([]budget.Counter, error) {
	rows, err := s.pool.Query(ctx, `SELECT scope, kind, used, closed FROM budget_usage WHERE day = $1`, day)
	if err != nil {
		return nil, fmt.Errorf("postgres: read usage: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (budget.Counter, error) {
		var c budget.Counter
		var kind string
		err := r.Scan(&c.Scope, &kind, &c.Used, &c.Closed)
		c.Kind = budget.Kind(kind)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read usage: %w", err)
	}
	return out, nil
}

// BudgetPrune implements budget.Store.
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
