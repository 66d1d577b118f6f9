package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/hostguard/hostguard/internal/retrystore"
	"github.com/hostguard/hostguard/retry/retrydriver"
)

// retrySignals wakes waiting claims of every handle on one database file
// in this process, keyed by the file's absolute path. SQLite has no way to
// hear of another process's writes; waiting claims poll for those. Entries
// are never removed: one small struct per file a process ever opened.
var retrySignals sync.Map // string -> *retrystore.Signal

func (s *Store) retrySignal() *retrystore.Signal {
	key, err := filepath.Abs(s.path)
	if err != nil {
		key = filepath.Clean(s.path)
	}
	sig, _ := retrySignals.LoadOrStore(key, new(retrystore.Signal))
	return sig.(*retrystore.Signal)
}

// RetryWake implements retrydriver.Store: the channel closes when a handle on
// the same file in this process commits a change that may make work
// claimable.
func (s *Store) RetryWake(ctx context.Context) (<-chan struct{}, error) {
	return s.retrySignal().Wait(), nil
}

// RetryNextDue implements retrydriver.Store through the wake index.
func (s *Store) RetryNextDue(ctx context.Context, _ retrydriver.NextDueParams) (retrydriver.NextDueResult, error) {
	var at sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT min(next_at) FROM retry_items WHERE ready = 0 AND next_at IS NOT NULL`).Scan(&at)
	if err != nil {
		return retrydriver.NextDueResult{}, fmt.Errorf("sqlite: retry next due: %w", err)
	}
	return retrydriver.NextDueResult{At: fromMicros(at.Int64)}, nil
}
