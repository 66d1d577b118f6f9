package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"
)

// SQLite's automatic checkpoint runs inside the commit that crosses its
// threshold, on the committing connection. Here that is the one writer:
// while it copies a thousand pages back into the database file and syncs
// it (tens of milliseconds on a large file whose pages are scattered),
// every claim and settlement queues behind it. So the writer never
// checkpoints in the ordinary course; a connection of its own does, in
// PASSIVE mode, which copies what it can without taking the write lock or
// waiting for readers, so writes go on while it runs.
//
// The writer keeps an automatic checkpoint at a much larger threshold as
// a backstop, so that the WAL stays bounded even if the background
// checkpoints fall behind (a reader holding an old snapshot for long).
//
// While nothing is written the turns space out, up to checkpointIdle, so
// that an idle daemon is not woken ten times a second for nothing.
const (
	checkpointEvery     = 100 * time.Millisecond
	checkpointIdle      = 2 * time.Second
	writerAutoCkptPages = 20000 // about 80 MB of WAL at 4 KiB pages
)

// checkpointer copies the WAL back into the database file every
// checkpointEvery, until stop is called.
type checkpointer struct {
	db   *sql.DB
	stop context.CancelFunc
	done chan struct{}
}

func startCheckpointer(path, pragmas string) (*checkpointer, error) {
	u := (&url.URL{Scheme: "file", Opaque: path}).String()
	db, err := sql.Open("sqlite", u+"?"+pragmas)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{db: db, stop: stop, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTimer(checkpointEvery)
	defer t.Stop()
	every := checkpointEvery
	last := int64(-1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// An error (the file busy with a TRUNCATE at Close, an I/O
		// error) leaves the frames in the WAL, where they are as
		// durable as in the database file; the next turn, or the
		// writer's backstop, copies them.
		var busy, frames, copied int64
		err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
		every = nextCheckpointWait(every, err == nil && frames == last)
		last = frames
		t.Reset(every)
	}
}

// nextCheckpointWait is the wait before the next turn: twice the last
// one, up to checkpointIdle, after a turn that found the WAL as the one
// before had left it; checkpointEvery after any other.
func nextCheckpointWait(last time.Duration, unchanged bool) time.Duration {
	if unchanged {
		return min(2*last, checkpointIdle)
	}
	return checkpointEvery
}

// close stops the checkpoints and waits for the one running.
func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	return c.db.Close()
}
