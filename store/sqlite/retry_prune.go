package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// Retention takes SQLite's one writer in short turns: while a delete
// runs, every claim and settlement waits for it, so a waiting claim must
// get in between two turns within a few milliseconds. How many items a
// turn can delete in that time depends on the file: about 6 000 a second
// at ten million items with random ids (each delete touches pages of the
// id index all over the file), six times as many at two hundred thousand.
// So a turn's size follows how long the last one took, between
// pruneChunkMin and pruneChunkMax, aiming at pruneTurn. At ten million
// items a claim of 100 takes about 1.5 ms itself; with turns of 2 ms its
// p99 during retention was 4.3–6.2 ms, with turns of 1 ms 3.7–4.8 ms,
// for retention at 4 000–5 000 deletes a second instead of 5 000–8 000
// (docs/benchmarks.md): plenty for a day's done items.
const (
	pruneTurn     = time.Millisecond
	pruneChunkMin = 4
	pruneChunkMax = 256
)

const (
	retryPruneSQL = `DELETE FROM retry_items WHERE rid IN (
			SELECT rid FROM retry_items WHERE state = 3 AND updated_at < ? ORDER BY updated_at LIMIT ?)
		AND state = 3`
	retryPrunedSQL = `UPDATE retry_pruned SET n = n + ?, last_at = ? WHERE one = 0`
)

// RetryPrune implements retrydriver.Store through the index of done items, in
// short write transactions (see pruneTurn); the retention counter moves
// in the transaction that deletes.
func (s *Store) RetryPrune(ctx context.Context, q retrydriver.PruneParams) (retrydriver.PruneResult, error) {
	var res retrydriver.PruneResult
	st, err := s.stmts(ctx, retryPruneSQL, retryPrunedSQL)
	if err != nil {
		return res, fmt.Errorf("sqlite: retry prune: %w", err)
	}
	// The size the last call ended with: the file has not changed much
	// since, and starting small again would spend the first turns of
	// every call finding it anew.
	chunk := int(s.pruneChunk.Load())
	if chunk == 0 {
		chunk = 32
	}
	defer func() { s.pruneChunk.Store(int64(chunk)) }()
	for res.Deleted < q.Limit {
		size := min(chunk, q.Limit-res.Deleted)
		var n int64
		start := time.Now()
		err := s.tx(ctx, func(tx *sql.Tx) error {
			r, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx, micros(q.Before), size)
			if err != nil {
				return err
			}
			if n, err = r.RowsAffected(); err != nil || n == 0 {
				return err
			}
			_, err = tx.StmtContext(ctx, st[1]).ExecContext(ctx, n, micros(q.Now))
			return err
		})
		if err != nil {
			return res, fmt.Errorf("sqlite: retry prune: %w", err)
		}
		res.Deleted += int(n)
		if int(n) < size || size < chunk {
			break
		}
		switch took := time.Since(start); {
		case took > pruneTurn:
			chunk = max(chunk/2, pruneChunkMin)
		case took < pruneTurn/2:
			chunk = min(chunk*2, pruneChunkMax)
		}
	}
	return res, nil
}
