package health_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/hostguard/hostguard/store/storetest"
)

// benchStores opens each engine on a fresh database for one benchmark.
var benchStores = []struct {
	name string
	open func(b *testing.B) health.Store
}{
	{"sqlite", func(b *testing.B) health.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(b *testing.B) health.Store {
		st, err := postgres.Open(context.Background(), storetest.PostgresDSN(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}},
}

// benchNow is when the benchmarks' seeded successes happened.
var benchNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func benchTracker(st health.Store) *health.Tracker {
	tr, err := health.New(st, health.Config{OutageAfter: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	return tr
}

// BenchmarkTouch measures one Touch (one upsert) on a table of 1000 names.
func BenchmarkTouch(b *testing.B) {
	for _, s := range benchStores {
		for _, ok := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/ok=%v", s.name, ok), func(b *testing.B) {
				tr := benchTracker(s.open(b))
				ctx := context.Background()
				names := make([]string, 1000)
				for i := range names {
					names[i] = fmt.Sprintf("host-%04d.example", i)
					if err := tr.Touch(ctx, names[i], true); err != nil {
						b.Fatal(err)
					}
				}
				i := 0
				c0 := cpuTime()
				for b.Loop() {
					if err := tr.Touch(ctx, names[i%len(names)], ok); err != nil {
						b.Fatal(err)
					}
					i++
				}
				reportCPU(b, c0)
			})
		}
	}
}

// BenchmarkFilter100 measures one Filter of 100 names against a table of
// 10 000 names, a tenth of them failing; 90 of the 100 are known.
func BenchmarkFilter100(b *testing.B) {
	for _, s := range benchStores {
		b.Run(s.name, func(b *testing.B) {
			st := s.open(b)
			tr := benchTracker(st)
			ctx := context.Background()
			const known = 10000
			for i := range known {
				name := fmt.Sprintf("host-%05d.example", i)
				if _, err := st.HealthTouch(ctx, health.StoreTouchParams{
					Name: name, Display: name, Outcome: health.Success, Now: benchNow,
				}); err != nil {
					b.Fatal(err)
				}
				if i%10 == 0 {
					if err := tr.Touch(ctx, name, false); err != nil {
						b.Fatal(err)
					}
				}
			}
			list := make([]string, 100)
			for i := range list {
				if i < 90 {
					list[i] = fmt.Sprintf("host-%05d.example", i*97%known)
				} else {
					list[i] = fmt.Sprintf("unknown-%d.example", i)
				}
			}
			for _, view := range []health.View{health.Healthy, health.Available} {
				b.Run(string(view), func(b *testing.B) {
					c0 := cpuTime()
					for b.Loop() {
						kept, _, err := tr.Filter(ctx, list, view)
						if err != nil || len(kept) == 0 {
							b.Fatal(len(kept), err)
						}
					}
					reportCPU(b, c0)
				})
			}
		})
	}
}

// cpuTime is the CPU time this process has used. The benchmarks report it
// per operation (cpu-ns/op) next to wall time because the machines they run
// on are shared: wall time there measures the neighbours as much as the
// code, CPU time much less so. PostgreSQL's own CPU is not included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}
