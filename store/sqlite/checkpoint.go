package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
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
//
// A PASSIVE checkpoint never restarts the WAL: under sustained writes, with
// readers on recent snapshots, it copies frames back but the file only
// grows. So once the WAL passes walBoundPages, a turn runs a TRUNCATE
// checkpoint instead, which holds writers back (they wait on the busy
// timeout) while it finishes the copy and empties the file: writes pause
// for the length of one checkpoint, tens of milliseconds, and the WAL
// stays near the bound.
//
// When a write or a checkpoint finds the disk full, the store is marked
// full: writers then wait up to writeHold for a TRUNCATE checkpoint to
// succeed, every turn, and fail with a disk-full error (an outage, 503)
// past it; /readyz says not ready. Held back, they cannot eat the space
// that comes free before the checkpoint has moved the WAL into the
// database and emptied it, so writing resumes by itself once there is
// room, without a restart or a pause in the load.
const (
	checkpointEvery     = 100 * time.Millisecond
	checkpointIdle      = 2 * time.Second
	writerAutoCkptPages = 20000 // about 80 MB of WAL at 4 KiB pages
	writeHold           = time.Second
)

// defaultWALBoundPages is the WAL size, in pages, past which checkpoints
// restart it: 16 MiB at 4 KiB pages. walBoundPages holds it; tests lower
// it.
const defaultWALBoundPages = 4096

var walBoundPages = func() *atomic.Int64 {
	v := new(atomic.Int64)
	v.Store(defaultWALBoundPages)
	return v
}()

// checkpointer copies the WAL back into the database file every
// checkpointEvery, until stop is called.
type checkpointer struct {
	db    *sql.DB
	wal   string // the WAL file's path
	stop  context.CancelFunc
	done  chan struct{}
	kick  chan struct{} // a writer found the WAL past its bound
	looks atomic.Int64  // unix nanoseconds of a writer's last look at the WAL

	mu      sync.Mutex
	over    atomic.Bool   // the WAL is past its bound: writers wait a little
	full    atomic.Bool   // the disk is full: writers wait, then fail
	cleared chan struct{} // closed when a checkpoint clears both
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
	c := &checkpointer{db: db, wal: path + "-wal", stop: stop, done: make(chan struct{}),
		kick: make(chan struct{}, 1), cleared: make(chan struct{})}
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
		case <-c.kick:
		}
		// An error (the file busy with a TRUNCATE at Close, an I/O
		// error) leaves the frames in the WAL, where they are as
		// durable as in the database file; the next turn, or the
		// writer's backstop, copies them.
		mode := "PASSIVE"
		if c.over.Load() || c.full.Load() || last > walBoundPages.Load() {
			mode = "TRUNCATE"
		}
		var busy, frames, copied int64
		err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &frames, &copied)
		switch {
		case diskFull(err):
			c.set(&c.full, true)
		case mode == "TRUNCATE":
			// Writers held for the bound go on after one attempt,
			// even one a reader kept from finishing (busy): the
			// next look raises the mark again. Writers held for a
			// full disk go on only once it succeeded.
			c.mu.Lock()
			c.over.Store(false)
			if err == nil && busy == 0 {
				c.full.Store(false)
			}
			close(c.cleared)
			c.cleared = make(chan struct{})
			c.mu.Unlock()
		}
		every = nextCheckpointWait(every, err == nil && frames == last && !c.full.Load())
		last = frames
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(every)
	}
}

// set raises the mark m (over or full) and wakes the checkpointer.
func (c *checkpointer) set(m *atomic.Bool, v bool) {
	c.mu.Lock()
	m.Store(v)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// passive runs a PASSIVE checkpoint now, on the checkpointer's connection
// (after the turn in progress, if any), and returns when it is done. A
// writer of many transactions in a row calls it every few megabytes, so
// that the next of its transactions finds the WAL copied back and starts
// it over, rather than growing it past the bound, where every writer
// would wait for a TRUNCATE checkpoint. An error leaves that to the
// bound, as it would without the call.
func (c *checkpointer) passive(ctx context.Context) {
	if c == nil {
		return
	}
	var busy, frames, copied int64
	_ = c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
}

// walLookEvery spaces out the writers' looks at the WAL's size, a stat
// each: often enough that a burst of writes cannot run far past the bound
// between two looks.
const walLookEvery = 5 * time.Millisecond

// hold runs before a write. It looks at the WAL's size now and then, and
// when it is past the bound, or the disk is full, waits for a checkpoint
// to restart it, at most writeHold: then a write goes on when only the
// bound was passed, and fails with errDiskFull when the disk is full.
func (c *checkpointer) hold(ctx context.Context) error {
	if c == nil {
		return nil
	}
	if now := time.Now().UnixNano(); now-c.looks.Load() > int64(walLookEvery) {
		c.looks.Store(now)
		if fi, err := os.Stat(c.wal); err == nil && fi.Size() > walBoundPages.Load()*walPageBytes {
			c.set(&c.over, true)
		}
	}
	if !c.over.Load() && !c.full.Load() {
		return nil
	}
	c.mu.Lock()
	ch := c.cleared
	c.mu.Unlock()
	t := time.NewTimer(writeHold)
	defer t.Stop()
	select {
	case <-ch:
		if c.full.Load() {
			return errDiskFull
		}
		return nil
	case <-t.C:
		if c.full.Load() {
			return errDiskFull
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// walPageBytes is the size of a WAL frame: a page and its header, at
// SQLite's default page size.
const walPageBytes = 4096 + 24

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

// sqliteFull is SQLite's primary result code for a full disk.
const sqliteFull = 13

// diskFull reports whether err is SQLite's disk-full error.
func diskFull(err error) bool {
	e, ok := errors.AsType[interface {
		error
		Code() int
	}](err)
	return ok && e.Code()&0xff == sqliteFull
}

// fullError is the refusal of a write held back past writeHold. It
// carries SQLite's code, so callers that tell an outage by it treat it
// as one.
type fullError struct{}

func (fullError) Error() string {
	return "sqlite: the disk is full; writes resume once the WAL can be checkpointed into the database"
}
func (fullError) Code() int { return sqliteFull }

var errDiskFull error = fullError{}
