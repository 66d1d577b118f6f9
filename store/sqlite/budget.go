package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hostguard/hostguard/budget/budgetdriver"
	"github.com/hostguard/hostguard/internal/budgetstore"
)

// BudgetAdmit implements budgetdriver.Store. SQLite has one writer at a time, so
// one BEGIN IMMEDIATE transaction makes the whole batch atomic against
// every other handle on the file; it also reads the settings generation,
// so admissions planned under changed settings come back Stale.
func (s *Store) BudgetAdmit(ctx context.Context, batch []budgetdriver.AdmitParams) ([]budgetdriver.AdmitResult, error) {
	out := make([]budgetdriver.AdmitResult, len(batch))
	err := s.tx(ctx, func(tx *sql.Tx) error {
		keys, slots := budgetstore.LedgerKeys(batch)
		l := budgetstore.NewLedger()
		// One statement per table for the whole batch: with many sources
		// a batch touches many counters, and a statement each would cost
		// a parse each.
		stored := make(map[budgetstore.CounterKey]bool, len(keys))
		if len(keys) > 0 {
			args := make([]any, 0, 3*len(keys))
			for _, k := range keys {
				args = append(args, micros(k.Day), k.Scope, string(k.Kind))
			}
			rows, err := tx.QueryContext(ctx, `WITH k(day, scope, kind) AS (VALUES `+placeholders(len(keys), 3)+`)
				SELECT u.day, u.scope, u.kind, u.used, u.closed_until FROM k JOIN budget_usage u
				    ON u.day = k.day AND u.scope = k.scope AND u.kind = k.kind`, args...)
			if err != nil {
				return fmt.Errorf("sqlite: read usage: %w", err)
			}
			for rows.Next() {
				var day, used, closed int64
				var scope, kind string
				if err := rows.Scan(&day, &scope, &kind, &used, &closed); err != nil {
					rows.Close()
					return fmt.Errorf("sqlite: read usage: %w", err)
				}
				k := budgetstore.CounterKey{Day: fromMicros(day), Scope: scope, Kind: budgetdriver.Kind(kind)}
				stored[k] = true
				l.PutCounter(k, used, fromMicros(closed))
			}
			if err := rows.Close(); err != nil {
				return fmt.Errorf("sqlite: read usage: %w", err)
			}
		}
		for _, k := range keys {
			if stored[k] {
				continue
			}
			init, err := budgetInitial(ctx, tx, micros(k.Day), k.Scope, k.Kind)
			if err != nil {
				return fmt.Errorf("sqlite: read usage: %w", err)
			}
			l.PutCounter(k, init, time.Time{})
		}
		if len(slots) > 0 {
			args := make([]any, len(slots))
			for i, k := range slots {
				args[i] = k
			}
			rows, err := tx.QueryContext(ctx, `SELECT source, next_at FROM budget_pace WHERE source IN (`+placeholders(len(slots), 1)+`)`, args...)
			if err != nil {
				return fmt.Errorf("sqlite: read pacing slots: %w", err)
			}
			for rows.Next() {
				var src string
				var next int64
				if err := rows.Scan(&src, &next); err != nil {
					rows.Close()
					return fmt.Errorf("sqlite: read pacing slots: %w", err)
				}
				l.PutSlot(src, fromMicros(next))
			}
			if err := rows.Close(); err != nil {
				return fmt.Errorf("sqlite: read pacing slots: %w", err)
			}
		}
		gen, err := budgetGeneration(ctx, tx)
		if err != nil {
			return err
		}
		l.PutSettings(gen)
		for i, p := range batch {
			out[i] = l.Admit(p)
		}
		if cs := l.Counters(); len(cs) > 0 {
			args := make([]any, 0, 4*len(cs))
			for _, c := range cs {
				args = append(args, micros(c.Day), c.Scope, string(c.Kind), c.Used)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO budget_usage (day, scope, kind, used) VALUES `+placeholders(len(cs), 4)+`
				ON CONFLICT (day, scope, kind) DO UPDATE SET used = excluded.used`, args...); err != nil {
				return fmt.Errorf("sqlite: update usage: %w", err)
			}
		}
		if ss := l.Slots(); len(ss) > 0 {
			args := make([]any, 0, 2*len(ss))
			for _, sl := range ss {
				args = append(args, sl.Key, micros(sl.Next))
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO budget_pace (source, next_at) VALUES `+placeholders(len(ss), 2)+`
				ON CONFLICT (source) DO UPDATE SET next_at = excluded.next_at`, args...); err != nil {
				return fmt.Errorf("sqlite: take pacing slots: %w", err)
			}
		}
		for i, p := range batch {
			g := p.Grant
			if g == nil || !out[i].Admitted {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO budget_grants (id, day, source, kind, cost, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
				g.ID, micros(g.Day), g.Source, string(g.Kind), g.Cost, micros(g.CreatedAt)); err != nil {
				return fmt.Errorf("sqlite: store grant: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// placeholders returns n groups of k question marks: "(?, ?), (?, ?)".
func placeholders(n, k int) string {
	group := "(" + strings.TrimSuffix(strings.Repeat("?, ", k), ", ") + ")"
	if k == 1 {
		group = "?"
	}
	return strings.TrimSuffix(strings.Repeat(group+", ", n), ", ")
}

// budgetInitial is a counter's value before its first charge: zero, except
// the total cap, which starts at the day's sum of source counters.
func budgetInitial(ctx context.Context, tx *sql.Tx, day int64, scope string, kind budgetdriver.Kind) (int64, error) {
	if scope != "" || kind != budgetdriver.CounterTotal {
		return 0, nil
	}
	var sum int64
	err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(used), 0) FROM budget_usage WHERE day = ? AND kind = ?`,
		day, string(budgetdriver.CounterSource)).Scan(&sum)
	return sum, err
}

// budgetAdjust changes a counter by delta through budgetstore.Adjust, so
// that it stays within 0..budget.MaxAmount. A missing counter is created
// from its initial value when create is set, and left alone otherwise.
func budgetAdjust(ctx context.Context, tx *sql.Tx, day int64, scope string, kind budgetdriver.Kind, delta int64, create bool) error {
	var used int64
	err := tx.QueryRowContext(ctx, `SELECT used FROM budget_usage WHERE day = ? AND scope = ? AND kind = ?`,
		day, scope, string(kind)).Scan(&used)
	switch {
	case errors.Is(err, sql.ErrNoRows) && !create:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		if used, err = budgetInitial(ctx, tx, day, scope, kind); err != nil {
			return fmt.Errorf("sqlite: update usage: %w", err)
		}
	case err != nil:
		return fmt.Errorf("sqlite: update usage: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO budget_usage (day, scope, kind, used) VALUES (?, ?, ?, ?)
		ON CONFLICT (day, scope, kind) DO UPDATE SET used = excluded.used`,
		day, scope, string(kind), budgetstore.Adjust(used, delta)); err != nil {
		return fmt.Errorf("sqlite: update usage: %w", err)
	}
	return nil
}

// BudgetCancel implements budgetdriver.Store.
func (s *Store) BudgetCancel(ctx context.Context, p budgetdriver.CancelParams) error {
	day := micros(p.Day)
	return s.tx(ctx, func(tx *sql.Tx) error {
		for _, c := range p.Charges {
			if err := budgetAdjust(ctx, tx, day, c.Scope, c.Kind, -c.Cost, false); err != nil {
				return fmt.Errorf("sqlite: refund usage: %w", err)
			}
		}
		if p.GrantID != "" {
			if _, err := tx.ExecContext(ctx, `DELETE FROM budget_grants WHERE id = ?`, p.GrantID); err != nil {
				return fmt.Errorf("sqlite: drop grant: %w", err)
			}
		}
		if p.PaceKey != "" {
			slot := micros(p.Slot)
			if _, err := tx.ExecContext(ctx, `UPDATE budget_pace SET next_at = ? WHERE source = ? AND next_at = ?`,
				slot, p.PaceKey, slot+p.Pace.Microseconds()); err != nil {
				return fmt.Errorf("sqlite: give back pacing slot: %w", err)
			}
		}
		return nil
	})
}

// BudgetSettle implements budgetdriver.Store.
func (s *Store) BudgetSettle(ctx context.Context, p budgetdriver.SettleParams) (budgetdriver.Grant, error) {
	var g budgetdriver.Grant
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var day, created, closedAt int64
		var kind string
		var actual sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT day, source, kind, cost, actual, created_at, closed_at FROM budget_grants WHERE id = ?`, p.ID).
			Scan(&day, &g.Source, &kind, &g.Cost, &actual, &created, &closedAt)
		if errors.Is(err, sql.ErrNoRows) {
			return budgetdriver.ErrGrantNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlite: read grant: %w", err)
		}
		g.ID, g.Day, g.Kind, g.CreatedAt, g.ClosedAt = p.ID, fromMicros(day), budgetdriver.Kind(kind), fromMicros(created), fromMicros(closedAt)
		if actual.Valid {
			g.Actual = &actual.Int64
			if actual.Int64 == p.Actual {
				return nil
			}
			return budgetdriver.ErrGrantClosed
		}
		if day < micros(p.Today) {
			return budgetdriver.ErrGrantExpired
		}
		delta := budgetstore.SettleDelta(g.Cost, p.Actual)
		for _, scope := range grantScopes(g.Source) {
			if err := budgetAdjust(ctx, tx, day, scope, g.Kind, delta, true); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE budget_grants SET actual = ?, closed_at = ? WHERE id = ?`,
			p.Actual, micros(p.Now), p.ID); err != nil {
			return fmt.Errorf("sqlite: close grant: %w", err)
		}
		g.Actual, g.ClosedAt = &p.Actual, p.Now
		return nil
	})
	return g, err
}

// grantScopes are the scopes a reservation charged its kind to.
func grantScopes(source string) []string {
	if source == "" {
		return []string{""}
	}
	return []string{"", source}
}

// BudgetClose implements budgetdriver.Store.
func (s *Store) BudgetClose(ctx context.Context, p budgetdriver.CloseParams) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		day := micros(p.Day)
		init, err := budgetInitial(ctx, tx, day, p.Scope, p.Kind)
		if err != nil {
			return fmt.Errorf("sqlite: close counter: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO budget_usage (day, scope, kind, used, closed_until) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (day, scope, kind) DO UPDATE SET closed_until = max(closed_until, excluded.closed_until)`,
			day, p.Scope, string(p.Kind), init, micros(p.Until)); err != nil {
			return fmt.Errorf("sqlite: close counter: %w", err)
		}
		return nil
	})
}

// BudgetUsage implements budgetdriver.Store.
func (s *Store) BudgetUsage(ctx context.Context, day time.Time) ([]budgetdriver.Counter, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT scope, kind, used, closed_until FROM budget_usage WHERE day = ?`, micros(day))
	if err != nil {
		return nil, fmt.Errorf("sqlite: read usage: %w", err)
	}
	defer rows.Close()
	var out []budgetdriver.Counter
	for rows.Next() {
		var c budgetdriver.Counter
		var kind string
		var closed int64
		if err := rows.Scan(&c.Scope, &kind, &c.Used, &closed); err != nil {
			return nil, fmt.Errorf("sqlite: read usage: %w", err)
		}
		c.Kind, c.ClosedUntil = budgetdriver.Kind(kind), fromMicros(closed)
		out = append(out, c)
	}
	return out, rows.Err()
}

// BudgetPrune implements budgetdriver.Store.
func (s *Store) BudgetPrune(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	b := micros(before)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM budget_usage WHERE day < ?`,
			`DELETE FROM budget_grants WHERE day < ?`,
			`DELETE FROM budget_pace WHERE next_at < ?`,
		} {
			r, err := tx.ExecContext(ctx, q, b)
			if err != nil {
				return fmt.Errorf("sqlite: prune budget: %w", err)
			}
			k, _ := r.RowsAffected()
			n += k
		}
		return nil
	})
	return n, err
}

// budgetGeneration reads the settings generation (0 when never written).
func budgetGeneration(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var gen int64
	err := q.QueryRowContext(ctx, `SELECT generation FROM budget_settings WHERE id = 1`).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: read budget settings: %w", err)
	}
	return gen, nil
}

// BudgetSettings implements budgetdriver.SettingsStore.
func (s *Store) BudgetSettings(ctx context.Context) (budgetdriver.Settings, error) {
	var out budgetdriver.Settings
	err := s.r.QueryRowContext(ctx, `SELECT generation, doc FROM budget_settings WHERE id = 1`).Scan(&out.Generation, &out.Doc)
	if errors.Is(err, sql.ErrNoRows) {
		return budgetdriver.Settings{}, nil
	}
	if err != nil {
		return budgetdriver.Settings{}, fmt.Errorf("sqlite: read budget settings: %w", err)
	}
	return out, nil
}

// BudgetPutSettings implements budgetdriver.SettingsStore.
func (s *Store) BudgetPutSettings(ctx context.Context, p budgetdriver.PutSettingsParams) (bool, error) {
	var ok bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE budget_settings SET generation = generation + 1, doc = ?, updated_at = ?
			WHERE id = 1 AND generation = ?`, p.Doc, micros(p.Now), p.Prev)
		if err != nil {
			return fmt.Errorf("sqlite: store budget settings: %w", err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return fmt.Errorf("sqlite: store budget settings: %w", err)
		}
		ok = n == 1
		return nil
	})
	return ok, err
}
