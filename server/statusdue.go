package server

import (
	"context"
	"sync"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// dueReuseFactor sets how long the status report reuses a queue snapshot:
// that many times what reading it took. Counting the waiting items by due
// time costs in proportion to the items due within 30 days (about a second
// on SQLite and 3.5 s on PostgreSQL with 5 million of them), and the
// dashboard asks every few seconds, so an expensive read is repeated at
// most a tenth of the time, while a cheap one (a small queue) is read
// afresh on every refresh.
const dueReuseFactor = 10

// queueSnapshot is the retry queue as the status report shows it: its
// counters and its due histogram, read from one snapshot of the store
// (retry.Scheduler.StatsAndDue), so that the counts and the bars of one
// refresh agree.
type queueSnapshot struct {
	Stats retry.Stats
	Due   retry.DueHistogram
}

// dueCache holds the status report's last queue snapshot. One read runs
// at a time; callers that arrive meanwhile wait for it and share its
// answer. GET /v1/items/stats does not use it: an API caller gets exact
// counts.
type dueCache struct {
	mu      sync.Mutex
	hist    queueSnapshot
	readAt  time.Time     // when hist was read; zero before the first read
	took    time.Duration // what reading hist took
	reading chan struct{} // closed when the read under way ends; nil if none
}

// get returns a snapshot no older than dueReuseFactor times its read,
// reading one with read when there is none.
func (c *dueCache) get(ctx context.Context, read func(context.Context) (queueSnapshot, error)) (queueSnapshot, error) {
	c.mu.Lock()
	for {
		if !c.readAt.IsZero() && time.Since(c.readAt) < dueReuseFactor*c.took {
			h := c.hist
			c.mu.Unlock()
			return h, nil
		}
		if c.reading == nil {
			break
		}
		wait := c.reading
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return queueSnapshot{}, ctx.Err()
		}
		c.mu.Lock()
		if !c.readAt.IsZero() && time.Since(c.readAt) < max(dueReuseFactor*c.took, time.Second) {
			// The read we waited for just ended: share it, even a
			// cheap one, rather than read again at once.
			h := c.hist
			c.mu.Unlock()
			return h, nil
		}
	}
	done := make(chan struct{})
	c.reading = done
	c.mu.Unlock()

	start := time.Now()
	h, err := read(ctx)
	took := time.Since(start)

	c.mu.Lock()
	c.reading = nil
	if err == nil {
		c.hist, c.readAt, c.took = h, time.Now(), took
	}
	c.mu.Unlock()
	close(done)
	return h, err
}
