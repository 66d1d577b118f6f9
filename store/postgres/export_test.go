package postgres

import (
	"context"
	"time"
)

// SetRetryNotifyGap sets the least time between two of s's NOTIFYs, for a
// test that needs to see the spacing. Call it before the first write.
func SetRetryNotifyGap(s *Store, d time.Duration) {
	s.wake.mu.Lock()
	defer s.wake.mu.Unlock()
	s.wake.gap = d
}

// SetRetryTxAttempts sets how many times s runs a retry write transaction
// that PostgreSQL aborted as a deadlock's victim; 1 runs each once, for a
// test that needs to see the deadlock. Call it before the first write.
func SetRetryTxAttempts(s *Store, n int) { s.txAttempts = n }

// NewClusterClock returns a cluster clock on s's database whose local
// clock is local instead of time.Now, anchored at once: a test's fake
// clock stands for the node's own, which may be set wrong or jump.
func NewClusterClock(s *Store, local func() time.Time) func() time.Time {
	c := &clusterClock{read: s.readClock, local: local, every: anchorEvery}
	if err := c.anchor(context.Background()); err != nil {
		panic(err)
	}
	return c.now
}

// ShiftClusterClock makes s's cluster clock read the database's clock
// plus d, as if the database's clock and this node's disagreed by d, and
// anchors it again.
func ShiftClusterClock(s *Store, d time.Duration) {
	read := s.clock.read
	s.clock.read = func(ctx context.Context) (time.Time, error) {
		t, err := read(ctx)
		return t.Add(d), err
	}
	if err := s.clock.anchor(context.Background()); err != nil {
		panic(err)
	}
}

// SetRetryWakeChunks sets how many items a wake of parked items moves
// before it returns (head) and in each later transaction (chunk), so
// that a test sees a wake finished in the background with few items.
// Call it before the first wake.
func SetRetryWakeChunks(s *Store, head, chunk int64) {
	s.jobs.head.Store(head)
	s.jobs.chunk.Store(chunk)
}

// StopRetryWakeJobs stops s's loop that finishes wakes, as if its node
// stopped: a wake then moves its first chunk only, and leaves the rest
// to another store.
func StopRetryWakeJobs(s *Store) { s.stopWakeJobs() }
