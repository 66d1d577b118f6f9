package storetest

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
)

// BenchBudgetAdmit measures admissions per second with 8 goroutines spread
// over sources sources (pacing off, since pacing would cap the rate), on
// stores that open returns: one handle per call, as separate nodes. Each
// source's allowance is set just below its share of the b.N attempts, and
// the benchmark fails unless exactly the allowances were admitted: zero
// overshoot, no lost update.
func BenchBudgetAdmit(b *testing.B, sources, nodes int, open func(testing.TB) budget.Store) {
	const goroutines = 8
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC) // pacing is off: a fixed clock is exact
	// Attempt i goes to source i % sources, so source s gets at least
	// floor(N/sources) attempts; an allowance one below that guarantees
	// refusals on every source.
	allowance := int64(b.N/sources) - 1
	exact := allowance >= 1
	if !exact {
		allowance = int64(b.N) // too few attempts to test the edge: admit all
	}
	cfg := budget.Config{Now: func() time.Time { return now }}
	names := make([]string, sources)
	for i := range names {
		names[i] = fmt.Sprintf("src%03d", i)
		cfg.Sources = append(cfg.Sources, budget.Source{
			Name: names[i], OwnerDailyLimit: budget.Int(allowance),
			Share: budget.ShareUnlimited, ReservePercent: budget.Int(0), Pace: budget.NoPace,
		})
	}
	bs := make([]*budget.Budget, nodes)
	for i := range bs {
		bs[i] = newBudget(b, open(b), cfg)
	}
	var seq, node, admitted, refused atomic.Int64
	b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		bud := bs[node.Add(1)%int64(nodes)]
		ctx := ctx(b)
		for pb.Next() {
			i := seq.Add(1) - 1
			_, err := bud.Admit(ctx, budget.AdmitParams{Source: names[i%int64(sources)], Kind: budget.KindHeadPoll})
			switch {
			case err == nil:
				admitted.Add(1)
			case errors.Is(err, budget.ErrExhausted):
				refused.Add(1)
			default:
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admits/s")
	want := int64(b.N)
	if exact {
		want = allowance * int64(sources)
	}
	if admitted.Load() != want {
		b.Fatalf("admitted %d of %d attempts; want exactly %d (allowance %d × %d sources)", admitted.Load(), b.N, want, allowance, sources)
	}
	cs, err := bs[0].Report(ctx(b))
	if err != nil {
		b.Fatal(err)
	}
	if cs.Total.Used != want {
		b.Fatalf("stored usage %d; want %d", cs.Total.Used, want)
	}
}
