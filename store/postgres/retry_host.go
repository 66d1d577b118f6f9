package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/internal/retrystore"
	"github.com/hostguard/hostguard/retry/retrydriver"
	"github.com/jackc/pgx/v5"
)

// A wake of a host's parked items (see retrydriver.Store.RetryWakeHost)
// runs in chunks, one transaction each. The first chunk, retryWakeHead
// items, commits before RetryWakeHost returns; when more are left, the
// same transaction writes a row of retry_wake_jobs, and the store's
// background loop moves the rest, retryWakeChunk items per transaction.
//
// Why not one statement: each item's new next_at is a new row version
// with an entry in every index of retry_items (next_at is indexed, so no
// such update is HOT). A single UPDATE of 100 000 items took 2.3 s of its
// 3.0 s on that alone, and every claim of a woken item waited for all of
// it to commit. The items are spread over the jitter (a minute by
// default), so only the first of them are due at once: the chunks share
// the spread in the order they run, each its own slice of it, like
// SQLite's, and the background moves items far faster than the spread
// makes them due (about 40 000 a second against 100 000 a minute), so
// each chunk commits before its slice begins.
//
// The job row makes the rest durable: a chunk locks it (SKIP LOCKED, so
// one chunk of a job runs at a time, cluster-wide), reads how far the
// wake has come, moves the next items and records the new position in
// the same transaction. If the node stops part way, its lock goes with
// its connection, and any store's loop (on Open, then every
// retryWakeJobPoll) takes the job up where it stopped.
const (
	retryWakeHead    = 2048
	retryWakeChunk   = 2048
	retryWakeJobPoll = 10 * time.Second
)

// retryWakeCountSQL counts the items a wake will move, through
// retry_items_host: $1 the host, $2 now, $3 the spread in microseconds,
// $4 the classes. The count divides the spread among the chunks; items
// parked meanwhile land at the spread's end.
const retryWakeCountSQL = `SELECT count(*) FROM retry_items
	WHERE host = $1 AND state = 1 AND NOT ready AND next_at > $2::timestamptz + $3::bigint * interval '1 microsecond'
		AND last_class = ANY ($4::text[])`

// retryWakeChunkSQL moves one chunk, with its share of the counter: $1
// the wake's time, $2 the spread in microseconds, $3 the host, $4 the
// classes, $5 the next_at the last chunk stopped at, $6 the chunk's size,
// $7 the start of its slice of the spread and $8 the slice's width in
// microseconds, $9 the events to count (1 for a wake's first chunk). It
// finds the items through retry_items_host in next_at order, from where
// the last chunk stopped, so that it does not walk the entries the
// earlier chunks left behind; the items it moves fall out of the range
// (they are due within the spread now), so a second wake for the same
// recovery finds nothing without reading a row. It locks them with SKIP
// LOCKED, so it never waits for a row and cannot deadlock whatever order
// it takes them in: a row another transaction holds is being written by
// a sighting or a settlement, which decides that item's schedule itself.
// Claims skip locked rows too, and the wake's rows are not due, so the
// two never wait for each other. It returns how many it moved and the
// last old next_at it passed.
const retryWakeChunkSQL = `WITH picked AS (
		SELECT id, next_at FROM retry_items
		WHERE host = $3 AND state = 1 AND NOT ready AND next_at > $1::timestamptz + $2::bigint * interval '1 microsecond'
			AND next_at >= $5::timestamptz AND last_class = ANY ($4::text[])
		ORDER BY next_at LIMIT $6
		FOR UPDATE SKIP LOCKED),
	woken AS (
		UPDATE retry_items t SET next_at = $7::timestamptz + floor(random() * ($8::bigint + 1)) * interval '1 microsecond', updated_at = $1
		WHERE t.id = ANY (ARRAY(SELECT id FROM picked))
		RETURNING 1),
	n AS (SELECT count(*) AS n FROM woken),
	counted AS (
		UPDATE retry_host_wakes SET events = events + $9, n = retry_host_wakes.n + n.n, last_at = $1
		FROM n WHERE one = 0 AND n.n > 0)
	SELECT n.n, (SELECT max(next_at) FROM picked) FROM n`

// wakeJob is a wake in progress: the wake's own terms, the count that
// divides its spread, and how far it has come.
type wakeJob struct {
	host    string
	classes []string
	at      time.Time
	spread  int64 // microseconds
	total   int64
	done    int64
	cursor  time.Time
}

// chunk moves the next size items of j in tx and advances j.
func (j *wakeJob) chunk(ctx context.Context, tx pgx.Tx, size int64, events int) (int64, error) {
	lo, hi := j.share(j.done), j.share(j.done+size)
	var n int64
	var last *time.Time
	err := tx.QueryRow(ctx, retryWakeChunkSQL, j.chunkArgs(size, lo, hi, events)...).Scan(&n, &last)
	if err != nil {
		return 0, err
	}
	j.done += n
	if last != nil {
		j.cursor = *last
	}
	return n, nil
}

func (j *wakeJob) chunkArgs(size int64, lo, hi time.Time, events int) []any {
	return []any{j.at, j.spread, j.host, j.classes, j.cursor, size, lo, hi.Sub(lo).Microseconds(), events}
}

// share is the point of the spread after the first done of the job's
// items (retrystore.WakeShare).
func (j *wakeJob) share(done int64) time.Time {
	return j.at.Add(time.Duration(retrystore.WakeShare(j.spread, done, j.total)) * time.Microsecond)
}

// RetryWakeHost implements retrydriver.Store: the first retryWakeHead
// items before it returns, the rest in the background (see above). A
// newer wake of the host replaces a job of an older one, which has
// nothing left to do that the newer one does not do.
func (s *Store) RetryWakeHost(ctx context.Context, q retrydriver.WakeHostParams) (retrydriver.WakeHostResult, error) {
	j := wakeJob{host: q.Host, classes: q.Classes, at: q.Now, spread: q.Spread.Microseconds()}
	if err := s.pool.QueryRow(ctx, retryWakeCountSQL, j.host, j.at, j.spread, j.classes).Scan(&j.total); err != nil {
		return retrydriver.WakeHostResult{}, fmt.Errorf("postgres: retry wake host: %w", err)
	}
	if j.total == 0 {
		return retrydriver.WakeHostResult{}, nil
	}
	var moved int64
	var queued bool
	head, _ := s.jobs.sizes()
	err := s.runTx(ctx, func() error {
		jj := j
		moved, queued = 0, false
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM retry_wake_jobs WHERE host = $1`, jj.host); err != nil {
				return err
			}
			n, err := jj.chunk(ctx, tx, head, 1)
			if err != nil || n < head {
				moved = n
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO retry_wake_jobs (host, classes, at, spread_us, total, done, cursor)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, jj.host, jj.classes, jj.at, jj.spread, jj.total, jj.done, jj.cursor)
			moved, queued = n, err == nil
			return err
		})
		return err
	})
	if err != nil {
		return retrydriver.WakeHostResult{}, fmt.Errorf("postgres: retry wake host: %w", err)
	}
	if moved > 0 {
		s.retryChanged()
	}
	if queued {
		s.jobs.kickLoop()
		// The rest are on their way: the job moves every item the count
		// found that nothing else writes meanwhile.
		return retrydriver.WakeHostResult{Woken: int(max(moved, j.total))}, nil
	}
	return retrydriver.WakeHostResult{Woken: int(moved)}, nil
}

// RetryWakeHostPlan returns PostgreSQL's plans (EXPLAIN) for the wake of
// host's parked items, its count and a chunk, without running them: the
// conformance case pins them to retry_items_host.
func (s *Store) RetryWakeHostPlan(ctx context.Context, q retrydriver.WakeHostParams) (string, error) {
	j := wakeJob{host: q.Host, classes: q.Classes, at: q.Now, spread: q.Spread.Microseconds(), total: 1}
	count, err := s.plan(ctx, retryWakeCountSQL, []any{j.host, j.at, j.spread, j.classes})
	if err != nil {
		return "", err
	}
	chunk, err := s.plan(ctx, retryWakeChunkSQL, j.chunkArgs(retryWakeHead, j.at, j.share(1), 1))
	return count + chunk, err
}

// wakeJobs is the store's background loop that finishes wakes (see
// above): it starts with the Store and stops when it closes.
type wakeJobs struct {
	kick   chan struct{} // buffer 1: a job was written here
	cancel context.CancelFunc
	done   chan struct{}
	// head and chunk, when not zero, replace retryWakeHead and
	// retryWakeChunk (tests).
	head, chunk atomic.Int64
}

func (w *wakeJobs) sizes() (head, chunk int64) {
	head, chunk = retryWakeHead, retryWakeChunk
	if n := w.head.Load(); n > 0 {
		head = n
	}
	if n := w.chunk.Load(); n > 0 {
		chunk = n
	}
	return head, chunk
}

func (w *wakeJobs) kickLoop() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (s *Store) startWakeJobs() {
	ctx, cancel := context.WithCancel(context.Background())
	s.jobs.kick, s.jobs.cancel, s.jobs.done = make(chan struct{}, 1), cancel, make(chan struct{})
	go s.wakeJobLoop(ctx)
}

func (s *Store) stopWakeJobs() {
	s.jobs.cancel()
	<-s.jobs.done
}

func (s *Store) wakeJobLoop(ctx context.Context) {
	defer close(s.jobs.done)
	t := time.NewTicker(retryWakeJobPoll)
	defer t.Stop()
	for {
		// An error leaves the job where it stopped, for the next pass.
		_ = s.finishWakeJobs(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.jobs.kick:
		case <-t.C:
		}
	}
}

// finishWakeJobs runs every job in the table, oldest first, a chunk at a
// time, until each is done or held by another store.
func (s *Store) finishWakeJobs(ctx context.Context) error {
	rows, err := s.pool.Query(ctx, `SELECT id FROM retry_wake_jobs ORDER BY id`)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	for _, id := range ids {
		for {
			more, err := s.wakeJobStep(ctx, id)
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	return nil
}

// wakeJobStep moves job id's next chunk and reports whether it has more:
// not when the job is done, gone (a newer wake replaced it) or held by
// another store's chunk.
func (s *Store) wakeJobStep(ctx context.Context, id int64) (more bool, err error) {
	var moved int64
	_, size := s.jobs.sizes()
	err = s.runTx(ctx, func() error {
		more, moved = false, 0
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var j wakeJob
			err := tx.QueryRow(ctx, `SELECT host, classes, at, spread_us, total, done, cursor
				FROM retry_wake_jobs WHERE id = $1 FOR UPDATE SKIP LOCKED`, id).
				Scan(&j.host, &j.classes, &j.at, &j.spread, &j.total, &j.done, &j.cursor)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			if moved, err = j.chunk(ctx, tx, size, 0); err != nil {
				return err
			}
			if moved < size {
				_, err = tx.Exec(ctx, `DELETE FROM retry_wake_jobs WHERE id = $1`, id)
				return err
			}
			more = true
			_, err = tx.Exec(ctx, `UPDATE retry_wake_jobs SET done = $2, cursor = $3 WHERE id = $1`, id, j.done, j.cursor)
			return err
		})
	})
	if moved > 0 {
		s.retryChanged()
	}
	return more, err
}

// WaitWakes returns once no wake of parked items is left to finish in the
// background, on any node, or when ctx ends: for tests and benchmarks
// that look at every item a wake moved, and for a program that wants the
// wake whole before it stops.
func (s *Store) WaitWakes(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		var n int64
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM retry_wake_jobs`).Scan(&n); err != nil {
			return fmt.Errorf("postgres: wait for wakes: %w", err)
		}
		if n == 0 {
			return nil
		}
		s.jobs.kickLoop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
