package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hostguard/hostguard/internal/retrystore"
	"github.com/hostguard/hostguard/retry/retrydriver"
)

// retryWakeChunkSQL wakes one chunk of one host's parked items of one
// class (see retrydriver.Store.RetryWakeHost), through retry_items_host, whose
// entries for a host and a class are in rowid order: ?1 now, ?2 the
// spread in microseconds, ?3 the host, ?4 the class, ?5 the last rowid the
// wake passed, ?6 the chunk's size, ?7 the start of the chunk's share of
// the spread and ?8 its width, both in microseconds. Each item is due at a
// random point of its chunk's share: random() % (width+1) is within
// ±width; its absolute value is the draw. The items it wakes stay in the
// index (they are still scheduled and not ready), so the rowid, not
// next_at, carries the wake past them.
const retryWakeChunkSQL = `UPDATE retry_items SET next_at = ?7 + abs(random() % (?8 + 1)), updated_at = ?1
	WHERE rid IN (SELECT rid FROM retry_items
		WHERE host = ?3 AND state = 1 AND ready = 0 AND last_class = ?4 AND rid > ?5 AND next_at > ?1 + ?2
		ORDER BY rid LIMIT ?6)
	RETURNING rid`

// retryWakeAnySQL reads, on the read pool, whether a wake would move
// anything, and how many items of the host wait out one of the classes
// (from the index alone, counting those due within the spread already):
// most hosts that answer have nothing parked, and a wake that finds
// nothing need not queue for the one writer; the count divides the
// spread among the chunks.
const retryWakeAnySQL = `SELECT EXISTS (SELECT 1 FROM retry_items
		WHERE host = ?3 AND state = 1 AND ready = 0 AND next_at > ?1 + ?2
			AND last_class IN (SELECT value FROM json_each(?4))),
	(SELECT count(*) FROM retry_items
		WHERE host = ?3 AND state = 1 AND ready = 0 AND last_class IN (SELECT value FROM json_each(?4)))`

const retryHostWakesSQL = `UPDATE retry_host_wakes SET events = events + ?1, n = n + ?2, last_at = ?3 WHERE one = 0`

// retryWakeChunk is how many items one transaction of a wake moves.
// SQLite has one writer and a claim is a write: a claim that arrives
// during a wake waits for the chunk in progress, a few milliseconds, not
// for the whole wake (100 000 items took over a second in one
// transaction, and every claim meanwhile waited for all of it).
//
// The chunks share the spread in the order they run, each its own slice
// of it, so that the items of one chunk land next to each other in
// retry_items_wake, the index on next_at: with a draw from the whole
// spread per item, each chunk of 256 wrote a few hundred scattered pages
// of that index, and the chunked wake took three times as long as the
// single transaction.
//
// A wake takes chunks of retryWakeChunk while no other write queues for
// the writer, and of retryWakeChunkShared after one did: a claim then
// waits for a small chunk, and a wake nobody waits behind keeps the
// larger chunk's speed. On one machine, 100 000 items: fixed chunks of 128
// woke them in 0.68–0.86 s with a claim's p99 during the wake at 3.0–4.5×
// its p99 without; of 48, in 0.83–1.07 s at 1.7–1.8×; of 32, in 1.16 s
// at 1.7–2.0×. Chunks of 128 that drop to 32 while claims queue: 0.62–0.88
// s, and 1.7–2.3×; dropping to 16: 1.6–2.0×, the wake taking about twice
// as long while claims run (docs/benchmarks.md).
const (
	retryWakeChunk       = 128
	retryWakeChunkShared = 16
)

// retryWakeCheckpointItems is how many items a wake moves between its
// own checkpoints (see checkpointer.passive). Without them a wake of
// 100 000 items grew the WAL past its bound at least once, and the
// TRUNCATE checkpoint that followed held every claim for tens of
// milliseconds. Every 8 000 items gave a shorter tail and a wake twice as
// long.
const retryWakeCheckpointItems = 32_768

// RetryWakeHost implements retrydriver.Store in chunks of retryWakeChunk items,
// one write transaction each with its share of the counter, when a read
// first finds anything to wake. The event is counted once, by its first
// chunk that moves anything. A wake that fails part way leaves the chunks
// it committed woken; calling it again wakes the rest, since woken items
// are due within the spread and no wake moves them.
func (s *Store) RetryWakeHost(ctx context.Context, q retrydriver.WakeHostParams) (retrydriver.WakeHostResult, error) {
	st, err := s.stmts(ctx, retryWakeChunkSQL, retryHostWakesSQL)
	if err != nil {
		return retrydriver.WakeHostResult{}, fmt.Errorf("sqlite: retry wake host: %w", err)
	}
	classes, _ := json.Marshal(q.Classes)
	now, spread := micros(q.Now), q.Spread.Microseconds()
	var found bool
	var parked int64
	if err := s.r.QueryRowContext(ctx, retryWakeAnySQL, now, spread, q.Host, string(classes)).Scan(&found, &parked); err != nil {
		return retrydriver.WakeHostResult{}, fmt.Errorf("sqlite: retry wake host: %w", err)
	}
	if !found {
		return retrydriver.WakeHostResult{}, nil
	}
	var woken, sinceCkpt int64
	size, waits := int64(retryWakeChunk), s.w.Stats().WaitCount
	for _, class := range q.Classes {
		for after := int64(0); ; {
			var n int64
			err := s.tx(ctx, func(tx *sql.Tx) error {
				n = 0
				lo, hi := share(now, spread, woken, parked), share(now, spread, woken+size, parked)
				rows, err := tx.StmtContext(ctx, st[0]).QueryContext(ctx, now, spread, q.Host, class, after, size, lo, hi-lo)
				if err != nil {
					return err
				}
				last := after
				for rows.Next() {
					var rid int64
					if err := rows.Scan(&rid); err != nil {
						rows.Close()
						return err
					}
					n++
					last = max(last, rid)
				}
				if err := rows.Close(); err != nil || n == 0 {
					return err
				}
				after = last
				events := 0
				if woken == 0 {
					events = 1
				}
				_, err = tx.StmtContext(ctx, st[1]).ExecContext(ctx, events, n, now)
				return err
			})
			if err != nil {
				if woken > 0 {
					s.retrySignal().Fire()
				}
				return retrydriver.WakeHostResult{Woken: int(woken)}, fmt.Errorf("sqlite: retry wake host: %w", err)
			}
			if n == 0 {
				break
			}
			woken += n
			if sinceCkpt += n; sinceCkpt >= retryWakeCheckpointItems {
				s.ckpt.passive(ctx)
				sinceCkpt = 0
			}
			// Claims waiting for the next due item hear of each chunk:
			// one of its items may be due before any they know of.
			s.retrySignal().Fire()
			if n < size {
				break
			}
			size = retryWakeChunk
			if w := s.w.Stats().WaitCount; w != waits {
				size, waits = retryWakeChunkShared, w
			}
		}
	}
	return retrydriver.WakeHostResult{Woken: int(woken)}, nil
}

// share is the point of the spread after the first done of total items,
// in microseconds from the epoch (retrystore.WakeShare).
func share(now, spread, done, total int64) int64 {
	return now + retrystore.WakeShare(spread, done, total)
}

// RetryWakeHostPlan returns SQLite's query plans (EXPLAIN QUERY PLAN) for
// the wake of host's parked items, its read and its write, without
// running them: the conformance case pins them to retry_items_host.
func (s *Store) RetryWakeHostPlan(ctx context.Context, q retrydriver.WakeHostParams) (string, error) {
	classes, _ := json.Marshal(q.Classes)
	var b strings.Builder
	for _, query := range []string{retryWakeAnySQL, retryWakeChunkSQL} {
		args := []any{micros(q.Now), q.Spread.Microseconds(), q.Host, string(classes)}
		if query == retryWakeChunkSQL {
			args = []any{micros(q.Now), q.Spread.Microseconds(), q.Host, q.Classes[0], 0, retryWakeChunk, micros(q.Now), q.Spread.Microseconds()}
		}
		p, err := s.plan(ctx, query, args)
		if err != nil {
			return "", err
		}
		b.WriteString(p)
	}
	return b.String(), nil
}
