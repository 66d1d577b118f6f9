package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestRunTxRunsAgainOnlyForAbortsAndBounded(t *testing.T) {
	deadlock := fmt.Errorf("postgres: x: %w", &pgconn.PgError{Code: "40P01"})
	serialization := &pgconn.PgError{Code: "40001"}
	other := &pgconn.PgError{Code: "23505"}
	plain := errors.New("x")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name  string
		ctx   context.Context
		errs  []error // what the runs return, in turn; the last repeats
		runs  int
		final error
	}{
		{"success", context.Background(), []error{nil}, 1, nil},
		{"deadlock once", context.Background(), []error{deadlock, nil}, 2, nil},
		{"serialization once", context.Background(), []error{serialization, nil}, 2, nil},
		{"deadlocks", context.Background(), []error{deadlock}, retryTxAttempts, deadlock},
		{"other error", context.Background(), []error{other}, 1, other},
		{"plain error", context.Background(), []error{plain}, 1, plain},
		{"context ended", cancelled, []error{deadlock}, 1, deadlock},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Store{}
			runs := 0
			err := s.runTx(c.ctx, func() error {
				err := c.errs[min(runs, len(c.errs)-1)]
				runs++
				return err
			})
			if runs != c.runs {
				t.Errorf("%d runs, want %d", runs, c.runs)
			}
			if c.final != nil && !errors.Is(err, c.final) {
				t.Errorf("error %v, want %v", err, c.final)
			}
			if c.errs[len(c.errs)-1] == nil && err != nil {
				t.Errorf("error %v, want nil", err)
			}
		})
	}
}
