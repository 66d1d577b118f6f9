package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/hostguard/hostguard/store/storetest"
)

// The backlog size for the benchmarks: large enough to give the indexes a
// realistic depth, small enough to set up in seconds. bench/cmd/retrybench
// measures at a million items.
const retryBacklog = 20_000

func openRetryBench(b *testing.B) *sqlite.Store {
	b.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func BenchmarkRetryCycle(b *testing.B) {
	for _, op := range []retry.Op{retry.OpSucceed, retry.OpFail} {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("%v/batch=%d", op, batch), func(b *testing.B) {
				s, addDue := storetest.RetryBench(b, openRetryBench(b), retryBacklog)
				storetest.BenchRetryCycle(b, s, addDue, batch, op)
			})
		}
	}
}

// wakeParked is how many parked items of one host the wake benchmarks
// wake at once: the 100 000.
const wakeParked = 100_000

// BenchmarkRetryWakeHost: one wake of 100 000 parked items of one host.
// Run with -benchtime=3x: setting up takes tens of seconds.
func BenchmarkRetryWakeHost(b *testing.B) {
	storetest.BenchWakeHost(b, openRetryBench(b), wakeParked)
}

// BenchmarkRetryClaimDuringWake: single-item claims without and during
// wakes of 100 000 parked items. Run with -benchtime=1x.
func BenchmarkRetryClaimDuringWake(b *testing.B) {
	storetest.BenchClaimDuringWake(b, openRetryBench(b), wakeParked, 5*time.Second)
}
