package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// retryTxAttempts bounds the runs of one of the retry store's write
// transactions that PostgreSQL aborted as a deadlock's victim (40P01) or
// for a serialization failure (40001).
//
// The store's own writers take rows in one order (see RetryUpdate) and
// cannot deadlock one another, but a transaction can still meet one that
// does not share it: a node of an older release (which took item rows in
// the database's collation order) while nodes are upgraded one at a
// time, a statement someone runs by hand, or a server whose default
// isolation level is serializable. An aborted transaction committed
// nothing, and each run reads and decides afresh (RetryUpdate calls Apply
// again on the records as they are then), so running it again is safe;
// without it the caller got the error, though a second run would almost
// always have gone through. Only whole transactions of several statements
// are run again here: single statements are left to the caller, as
// before.
const retryTxAttempts = 3

// runTx calls run, a whole write transaction, until it succeeds, fails
// with an error other than 40P01 or 40001, ctx ends, or it has run
// s.txAttempts times (retryTxAttempts when zero).
func (s *Store) runTx(ctx context.Context, run func() error) error {
	n := s.txAttempts
	if n <= 0 {
		n = retryTxAttempts
	}
	for attempt := 1; ; attempt++ {
		err := run()
		if err == nil || attempt >= n || ctx.Err() != nil || !retryableTx(err) {
			return err
		}
	}
}

// retryableTx reports whether err is PostgreSQL's verdict that the
// transaction was aborted for the sake of another one.
func retryableTx(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "40P01", // deadlock_detected
		"40001": // serialization_failure
		return true
	}
	return false
}
