package postgres

import (
	"context"
	"fmt"

	"github.com/hostguard/hostguard/retry/retrydriver"
	"github.com/hostguard/hostguard/store/internal/fault"
	"github.com/jackc/pgx/v5"
)

var _ retrydriver.SucceedClaimer = (*Store)(nil)

// The statements of RetrySucceedClaim that only take locks, in the order
// every writer takes them: item rows first, in id order (see RetryUpdate),
// then counter rows in key order.
//
// Each statement that changes an item's state locks its counter rows
// (retry_counts, by the statement trigger) in key order at its end. The
// succeed step's rows (leased, done) sort after the claim's (pending,
// scheduled), so two steps in one transaction would take them out of
// order, and deadlock against a claim of another connection that shares
// the counter shard: it holds the pending row and waits for the leased
// one. Locking the shard's rows in key order before either step leaves
// both triggers only rows already held. The shard is the trigger's
// (migration 0003). The succeed step's items are locked before the
// counters, as every other writer of items does it, so that a writer that
// holds one of them and waits for a counter row cannot wait for us.
const (
	retryLockItemsSQL = `SELECT count(*) FROM
		(SELECT 1 FROM retry_items WHERE id = ANY ($1) ORDER BY id COLLATE "C" FOR UPDATE) l`
	retryLockCountsSQL = `SELECT count(*) FROM
		(SELECT 1 FROM retry_counts WHERE shard = pg_backend_pid() % 16 ORDER BY state, class COLLATE "C" FOR UPDATE) c`
)

// RetrySucceedClaim implements retrydriver.SucceedClaimer in one round
// trip: the statements go as one batch, which PostgreSQL runs as one
// implicit transaction, committed at its end, or rolled back whole when
// any statement fails. A batch PostgreSQL aborts for the sake of another
// transaction is sent again a few times (retryTxAttempts).
func (s *Store) RetrySucceedClaim(ctx context.Context, q retrydriver.SucceedClaimParams) (retrydriver.SucceedClaimResult, error) {
	if len(q.Succeed.IDs) == 0 {
		c, err := s.RetryClaim(ctx, q.Claim)
		return retrydriver.SucceedClaimResult{Claim: c}, err
	}
	var res retrydriver.SucceedClaimResult
	if err := s.runTx(ctx, func() error { return s.succeedClaim(ctx, q, &res) }); err != nil {
		return retrydriver.SucceedClaimResult{}, fmt.Errorf("postgres: retry succeed and claim: %w", err)
	}
	return res, nil
}

func (s *Store) succeedClaim(ctx context.Context, q retrydriver.SucceedClaimParams, res *retrydriver.SucceedClaimResult) (err error) {
	b := &pgx.Batch{}
	b.Queue(retryLockItemsSQL, q.Succeed.IDs)
	b.Queue(retryLockCountsSQL)
	b.Queue(retrySucceedSQL, q.Succeed.Now, q.Succeed.IDs, q.Succeed.Keys)
	b.Queue(retryClaimSQL, retryClaimArgs(q.Claim)...)
	injected := fault.AfterLast(ctx)
	if injected != nil {
		b.Queue(`SELECT 1 / $1::int`, 0)
	}
	br := s.pool.SendBatch(ctx, b)
	defer func() {
		// Close reads the end of the transaction: an error there (the
		// commit's own) means nothing was committed.
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	marked, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	res.Succeed.Done = retrySucceeded(q.Succeed.IDs, marked)
	rows, err = br.Query()
	if err != nil {
		return err
	}
	if res.Claim, err = scanRetryClaim(rows, q.Claim); err != nil {
		return err
	}
	if injected != nil {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("%w (%w)", injected, err)
		}
		return injected
	}
	return nil
}
