package queue_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard/bench/queue"
)

// The figures in docs/benchmarks.md come from cmd/queuebench, which
// alternates systems and takes medians over a larger n; these benchmarks
// keep the same code paths runnable from go test (CI runs them once).

type target func(b *testing.B) string

func pgTarget(name string) target {
	return func(b *testing.B) string { return fresh(b, name) }
}

func fileTarget(name string) target {
	return func(b *testing.B) string { return filepath.Join(b.TempDir(), name+".db") }
}

func BenchmarkBurnDown(b *testing.B) {
	opts := queue.CycleOptions{N: 1_000, RiverWorkers: 100, Limit: time.Minute}
	for _, c := range []struct {
		name   string
		run    func(context.Context, string, queue.CycleOptions) (queue.Cycle, error)
		target target
	}{
		{"system=hostguard/store=postgres", queue.HostguardCycle, pgTarget("hgbench_test_hg")},
		{"system=river/store=postgres", queue.RiverPostgresCycle, pgTarget("hgbench_test_river")},
		{"system=hostguard/store=sqlite", queue.HostguardCycle, fileTarget("hg")},
		{"system=river/store=sqlite", queue.RiverSQLiteCycle, fileTarget("river")},
	} {
		b.Run(c.name, func(b *testing.B) {
			var add, work time.Duration
			for range b.N {
				b.StopTimer()
				t := c.target(b)
				b.StartTimer()
				res, err := c.run(context.Background(), t, opts)
				if err != nil {
					b.Fatal(err)
				}
				add += res.Add
				work += res.Work
			}
			n := float64(b.N * opts.N)
			b.ReportMetric(n/add.Seconds(), "adds/s")
			b.ReportMetric(n/work.Seconds(), "cycles/s")
		})
	}
}

func BenchmarkBacklog(b *testing.B) {
	opts := queue.DormantOptions{Backlog: 5_000, Trickle: 50, Every: time.Millisecond, Poll: time.Millisecond, Burst: 500, Limit: time.Minute}
	for _, c := range []struct {
		name   string
		run    func(context.Context, string, queue.DormantOptions) (queue.Dormant, error)
		target target
	}{
		{"system=hostguard/store=postgres", queue.HostguardDormant, pgTarget("hgbench_test_hg")},
		{"system=river/store=postgres", queue.RiverPostgresDormant, pgTarget("hgbench_test_river")},
		{"system=hostguard/store=sqlite", queue.HostguardDormant, fileTarget("hg")},
	} {
		b.Run(c.name, func(b *testing.B) {
			var lags []time.Duration
			for range b.N {
				b.StopTimer()
				t := c.target(b)
				b.StartTimer()
				d, err := c.run(context.Background(), t, opts)
				if err != nil {
					b.Fatal(err)
				}
				lags = append(lags, d.Lags...)
			}
			b.ReportMetric(float64(queue.Quantile(lags, 0.5))/1e6, "lag-p50-ms")
			b.ReportMetric(float64(queue.Quantile(lags, 0.99))/1e6, "lag-p99-ms")
		})
	}
}
