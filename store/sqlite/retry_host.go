package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hostguard/hostguard/retry"
)

// retryWakeHostSQL is the wake of one host's parked items (see
// retry.Store.RetryWakeHost), through retry_items_host: ?1 now, ?2 the
// spread in microseconds, ?3 the host, ?4 the classes as a JSON array.
// random() % (spread+1) is within ±spread; its absolute value is the draw.
const retryWakeHostSQL = `UPDATE retry_items SET next_at = ?1 + abs(random() % (?2 + 1)), updated_at = ?1
	WHERE host = ?3 AND state = 1 AND ready = 0 AND next_at > ?1 + ?2
		AND last_class IN (SELECT value FROM json_each(?4))`

// retryWakeAnySQL says, on the read pool, whether retryWakeHostSQL would
// move anything: most hosts that answer have nothing parked, and a wake
// that finds nothing need not queue for the one writer.
const retryWakeAnySQL = `SELECT EXISTS (SELECT 1 FROM retry_items
	WHERE host = ?3 AND state = 1 AND ready = 0 AND next_at > ?1 + ?2
		AND last_class IN (SELECT value FROM json_each(?4)))`

const retryHostWakesSQL = `UPDATE retry_host_wakes SET events = events + 1, n = n + ?1, last_at = ?2 WHERE one = 0`

// RetryWakeHost implements retry.Store in one write transaction: the
// wake's one statement over the items, and the counter, when a read
// first finds anything to wake.
func (s *Store) RetryWakeHost(ctx context.Context, q retry.StoreWakeHostParams) (retry.StoreWakeHostResult, error) {
	st, err := s.stmts(ctx, retryWakeHostSQL, retryHostWakesSQL)
	if err != nil {
		return retry.StoreWakeHostResult{}, fmt.Errorf("sqlite: retry wake host: %w", err)
	}
	classes, _ := json.Marshal(q.Classes)
	now := micros(q.Now)
	var found bool
	if err := s.r.QueryRowContext(ctx, retryWakeAnySQL, now, q.Spread.Microseconds(), q.Host, string(classes)).Scan(&found); err != nil {
		return retry.StoreWakeHostResult{}, fmt.Errorf("sqlite: retry wake host: %w", err)
	}
	if !found {
		return retry.StoreWakeHostResult{}, nil
	}
	var woken int64
	err = s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx, now, q.Spread.Microseconds(), q.Host, string(classes))
		if err != nil {
			return err
		}
		if woken, err = r.RowsAffected(); err != nil || woken == 0 {
			return err
		}
		_, err = tx.StmtContext(ctx, st[1]).ExecContext(ctx, woken, now)
		return err
	})
	if err != nil {
		return retry.StoreWakeHostResult{}, fmt.Errorf("sqlite: retry wake host: %w", err)
	}
	if woken > 0 {
		s.retrySignal().Fire()
	}
	return retry.StoreWakeHostResult{Woken: int(woken)}, nil
}

// RetryWakeHostPlan returns SQLite's query plans (EXPLAIN QUERY PLAN) for
// the wake of host's parked items, its read and its write, without
// running them: the conformance case pins them to retry_items_host.
func (s *Store) RetryWakeHostPlan(ctx context.Context, q retry.StoreWakeHostParams) (string, error) {
	classes, _ := json.Marshal(q.Classes)
	args := []any{micros(q.Now), q.Spread.Microseconds(), q.Host, string(classes)}
	var b strings.Builder
	for _, query := range []string{retryWakeAnySQL, retryWakeHostSQL} {
		p, err := s.plan(ctx, query, args)
		if err != nil {
			return "", err
		}
		b.WriteString(p)
	}
	return b.String(), nil
}
