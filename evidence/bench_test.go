package evidence_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/hostguard/hostguard/store/storetest"
)

// benchRows is the table's default cap: the benchmarks run at it.
const benchRows = evidence.DefaultMaxRows

// benchStores opens each engine with benchRows verdicts already stored
// (60 000 subjects, one source, a third of them negative), checked over the
// last five hours.
func benchStores(b *testing.B, now time.Time) map[string]evidence.Store {
	ctx := context.Background()
	out := map[string]evidence.Store{}

	path := filepath.Join(b.TempDir(), "hostguard.db")
	lite, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lite.Close() })
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	tx, err := raw.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO evidence (fingerprint, subject, source, verdict, checked_at) VALUES ('', ?, 'idx', ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	for i := range benchRows {
		at := now.Add(-5 * time.Hour).Add(time.Duration(i) * 5 * time.Hour / benchRows)
		if _, err := ins.Exec(fmt.Sprint("subject-", i), 1+i%3/2, at.UnixMicro()); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	out["sqlite"] = lite

	pg, err := postgres.Open(ctx, storetest.PostgresDSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Close() })
	if _, err := pg.Pool().Exec(ctx, `
		INSERT INTO evidence (fingerprint, subject, source, verdict, checked_at)
		SELECT '', 'subject-' || i, 'idx', 1 + (i % 3) / 2, $1::timestamptz + (i * interval '5 hours' / $2::int)
		FROM generate_series(0, $2::int - 1) AS i`, now.Add(-5*time.Hour), benchRows); err != nil {
		b.Fatal(err)
	}
	out["postgres"] = pg
	return out
}

var benchSeq atomic.Int64

// BenchmarkRecordAtCap records verdicts into a full table, so that every
// write also trims the oldest row.
func BenchmarkRecordAtCap(b *testing.B) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for name, st := range benchStores(b, now) {
		b.Run(name, func(b *testing.B) {
			tick := now
			book, err := evidence.New(st, evidence.Config{Now: func() time.Time { tick = tick.Add(time.Microsecond); return tick }})
			if err != nil {
				b.Fatal(err)
			}
			defer book.Close()
			ctx := context.Background()
			for b.Loop() {
				// Unique across -count repetitions, which share the store:
				// every write inserts, and so trims.
				i := benchSeq.Add(1)
				if err := book.Record(ctx, evidence.Check{Source: "idx", Subject: fmt.Sprint("new-", i), Verdict: evidence.Available}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if n, _ := st.EvidenceCount(ctx); n != benchRows {
				b.Fatalf("table holds %d rows after the benchmark; the cap is %d", n, benchRows)
			}
		})
	}
}

// BenchmarkSnapshotRefresh computes the per-subject set over a full table.
func BenchmarkSnapshotRefresh(b *testing.B) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for name, st := range benchStores(b, now) {
		b.Run(name, func(b *testing.B) {
			book, err := evidence.New(st, evidence.Config{Now: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			defer book.Close()
			for b.Loop() {
				if err := book.Refresh(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if s := book.Snapshot(); s.Len() != benchRows {
				b.Fatalf("snapshot holds %d subjects, want %d", s.Len(), benchRows)
			}
		})
	}
}

// BenchmarkSnapshotRead is the reader's path: a fresh set, looked up from
// every core.
func BenchmarkSnapshotRead(b *testing.B) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := benchStores(b, now)["sqlite"]
	book, err := evidence.New(st, evidence.Config{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	defer book.Close()
	if err := book.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	subjects := make([]string, 1024)
	for i := range subjects {
		subjects[i] = fmt.Sprint("subject-", i*37)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if book.Snapshot().Verdict(subjects[i%len(subjects)]) == evidence.Unknown {
				panic("a stored subject reads as unknown")
			}
			i++
		}
	})
}
