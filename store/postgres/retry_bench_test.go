package postgres_test

import (
	"context"
	"fmt"
	"testing"

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
