package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
)

// The backlog size for the benchmarks: large enough to give the indexes a
// realistic depth, small enough to set up in seconds. bench/cmd/retrybench
// measures at a million items.
const retryBacklog = 20_000

func BenchmarkRetryCycle(b *testing.B) {
	for _, op := range []retry.Op{retry.OpSucceed, retry.OpFail} {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("%v/batch=%d", op, batch), func(b *testing.B) {
				st, err := postgres.Open(context.Background(), storetest.PostgresDSN(b))
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				s, addDue := storetest.RetryBench(b, st, retryBacklog)
				storetest.BenchRetryCycle(b, s, addDue, batch, op)
			})
		}
	}
}

// wakeParked is how many parked items of one host the wake benchmarks
// wake at once: the 100 000.
const wakeParked = 100_000

func openBench(b *testing.B) *postgres.Store {
	b.Helper()
	// No statement deadline: on a loaded machine a wake may take longer
	// than the default, and the figure is what is wanted.
	st, err := postgres.OpenConfig(context.Background(), storetest.PostgresDSN(b), postgres.Config{Timeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkRetryWakeHost: one wake of 100 000 parked items of one host.
// Run with -benchtime=3x: setting up takes tens of seconds.
func BenchmarkRetryWakeHost(b *testing.B) {
	storetest.BenchWakeHost(b, openBench(b), wakeParked)
}

// BenchmarkRetryClaimDuringWake: single-item claims without and during
// wakes of 100 000 parked items. Run with -benchtime=1x.
func BenchmarkRetryClaimDuringWake(b *testing.B) {
	storetest.BenchClaimDuringWake(b, openBench(b), wakeParked, 5*time.Second)
}
