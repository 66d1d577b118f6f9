package retry

import (
	"context"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// Retention works in bounded batches: one store call deletes at most
// pruneBatch items (an engine with a single writer splits that further),
// so that it never holds locks or grows a WAL for long,
// and one Prune call runs at most pruneBatches of them, so that a leader's
// loop stays responsive after a long outage; the next call goes on.
const (
	pruneBatch   = 1000
	pruneBatches = 1000
)

// Prune deletes done items whose last change is older than
// Config.KeepDone, oldest first, in batches, and returns how many it
// deleted. It never deletes an item that is not done. It is meant to be
// called by one node at a time (the leader) every few minutes; calling it
// on several at once is safe but wasted work. With a negative KeepDone it
// does nothing. Stats.Pruned adds up what it deleted.
func (s *Scheduler) Prune(ctx context.Context) (int, error) {
	if s.cfg.KeepDone < 0 {
		return 0, nil
	}
	total := 0
	for range pruneBatches {
		now := s.now()
		res, err := s.store.RetryPrune(ctx, retrydriver.PruneParams{
			Now:    now,
			Before: now.Add(-s.cfg.KeepDone),
			Limit:  pruneBatch,
		})
		total += res.Deleted
		if err != nil {
			return total, err
		}
		if res.Deleted < pruneBatch {
			break
		}
	}
	return total, nil
}

// maxKeepDone bounds KeepDone so that now-KeepDone stays in range.
const maxKeepDone = 100 * 365 * 24 * time.Hour
