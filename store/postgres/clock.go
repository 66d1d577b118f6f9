package postgres

import (
	"context"
	"sync"
	"time"
)

// Anchoring: see ClusterNow.
const (
	// anchorEvery is how long one anchor serves. It bounds how far a
	// node's monotonic clock may drift from the database's (NTP slews by
	// at most 0.05 %: 5 ms in 10 s), and how long a node whose process was
	// paused (a suspended virtual machine, where the monotonic clock stops)
	// stays behind.
	anchorEvery = 10 * time.Second
	// anchorTimeout bounds the read of the database's clock, so that a
	// clock read never holds a caller for the whole statement timeout.
	anchorTimeout = time.Second
	// anchorRetry is the least time between two failed anchors, so that an
	// outage costs one attempt a second, not one per call.
	anchorRetry = time.Second
)

// ClusterNow is the cluster's clock: the database's clock_timestamp(),
// read at an anchor, plus the time elapsed since on this process's
// monotonic clock. Every node that shares the database reads the same
// time to within half a round trip and a few milliseconds of drift, so
// that lease ends, leader leases and due times stamped by one node mean
// the same to every other, and a node whose own clock is set wrong, or
// jumps, neither steals a live lease nor holds work back. It costs no
// round trip per call: one clock read every 10 s, made by the call that
// finds the anchor stale.
//
// A capability whose Config.Now is nil uses it (see internal/storeclock);
// a test that sets Now drives the capability with its own clock as
// before. When the database cannot be read, the last anchor goes on
// serving.
func (s *Store) ClusterNow() time.Time { return s.clock.now() }

// clusterClock is ClusterNow's state.
type clusterClock struct {
	// read returns the database's clock.
	read func(context.Context) (time.Time, error)
	// local is the node's clock, time.Now: its readings carry Go's
	// monotonic clock, so the elapsed time between two of them does not
	// follow the wall clock's jumps. A source without a monotonic reading
	// (a test's fake clock) is caught when it jumps by more than
	// anchorEvery, or back: the anchor is then taken again.
	local func() time.Time
	every time.Duration

	mu        sync.Mutex
	db        time.Time // the database's clock at the anchor
	at        time.Time // local's reading at the anchor
	anchored  bool
	anchoring bool      // a call is reading the database's clock
	retryAt   time.Time // time.Now after which a failed anchor is tried again
}

func (c *clusterClock) now() time.Time {
	c.mu.Lock()
	e := c.local().Sub(c.at)
	stale := !c.anchored || e < 0 || e >= c.every
	if stale && !c.anchoring && (c.retryAt.IsZero() || !time.Now().Before(c.retryAt)) {
		// This call anchors again. Calls meanwhile read the old anchor,
		// which the monotonic clock keeps right, rather than wait for a
		// database that may be slow to answer.
		c.anchoring = true
		c.mu.Unlock()
		_ = c.take(context.Background())
		c.mu.Lock()
		e = c.local().Sub(c.at)
	}
	defer c.mu.Unlock()
	if !c.anchored {
		// No anchor yet, and the database does not answer: the node's own
		// clock is the best there is.
		return c.local().UTC()
	}
	return c.db.Add(max(e, 0))
}

// anchor reads the database's clock now, so that ClusterNow works from a
// fresh anchor.
func (c *clusterClock) anchor(ctx context.Context) error {
	c.mu.Lock()
	c.anchoring = true
	c.mu.Unlock()
	return c.take(ctx)
}

// take reads the database's clock and makes it the anchor. The caller
// has set anchoring; take clears it.
func (c *clusterClock) take(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, anchorTimeout)
	defer cancel()
	before := c.local()
	db, err := c.read(ctx)
	after := c.local()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.anchoring = false
	if err != nil {
		c.retryAt = time.Now().Add(anchorRetry)
		return err
	}
	// The database read its clock somewhere within the round trip: its
	// middle is the best guess, off by at most half the round trip.
	mid := before
	if rt := after.Sub(before); rt > 0 {
		mid = before.Add(rt / 2)
	}
	c.db, c.at, c.anchored, c.retryAt = db.UTC(), mid, true, time.Time{}
	return nil
}

// readClock is clusterClock.read for s.
func (s *Store) readClock(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t)
	return t, err
}

func (s *Store) initClock(local func() time.Time) {
	s.clock = &clusterClock{read: s.readClock, local: local, every: anchorEvery}
}
