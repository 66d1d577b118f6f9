package guard_test

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// cpuTime returns the CPU time this process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ns/op, the process's CPU time per operation since
// start: on a shared machine it is disturbed by the neighbours far less
// than the wall time in ns/op. For a parallel benchmark it is the CPU of
// all goroutines together, per operation.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

func benchURLs(n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://host%d.example:8080/api/items?page=2", i)
	}
	return urls
}

// benchGuard returns a guard with every endpoint of urls already known and
// closed, and a kill switch that reads a flag; see BenchmarkAcquireAnsweredEnvSwitch
// for the default one.
func benchGuard(b *testing.B, urls []string, disabled func() bool) *guard.Guard {
	g := guard.New(guard.Config{MaxEndpoints: 2 * len(urls), Disabled: disabled})
	for _, u := range urls {
		t, err := g.Acquire(u)
		if err != nil {
			b.Fatal(err)
		}
		t.Answered()
	}
	return g
}

func acquireAnswered(b *testing.B, g *guard.Guard, u string) {
	t, err := g.Acquire(u)
	if err != nil {
		b.Fatal(err)
	}
	t.Answered()
	t.Release()
}

// BenchmarkAcquireAnswered measures the hot path, Acquire + Answered +
// Release on a closed endpoint, serially and from parallel goroutines,
// with one endpoint (parallel callers share it) and with 10 000 (parallel
// callers rarely meet).
func BenchmarkAcquireAnswered(b *testing.B) {
	var off atomic.Bool
	for _, n := range []int{1, 10_000} {
		urls := benchURLs(n)
		b.Run(fmt.Sprintf("endpoints=%d/serial", n), func(b *testing.B) {
			g := benchGuard(b, urls, off.Load)
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime(b)
			for i := range b.N {
				acquireAnswered(b, g, urls[i%n])
			}
			reportCPU(b, start)
		})
		b.Run(fmt.Sprintf("endpoints=%d/parallel", n), func(b *testing.B) {
			g := benchGuard(b, urls, off.Load)
			var seed atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime(b)
			b.RunParallel(func(pb *testing.PB) {
				i := int(seed.Add(7919))
				for pb.Next() {
					acquireAnswered(b, g, urls[i%n])
					i++
				}
			})
			reportCPU(b, start)
		})
	}
}

// BenchmarkAcquireAnsweredEnvSwitch is the hot path with the default kill
// switch, which reads HOSTGUARD_DISABLE_GUARD under the process's
// environment lock on every Acquire.
func BenchmarkAcquireAnsweredEnvSwitch(b *testing.B) {
	urls := benchURLs(10_000)
	g := benchGuard(b, urls, nil)
	var seed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919))
		for pb.Next() {
			acquireAnswered(b, g, urls[i%len(urls)])
			i++
		}
	})
	reportCPU(b, start)
}

// BenchmarkAcquireNonCanonical keys a URL that needs rewriting (upper case,
// userinfo, default port), which costs one more allocation.
func BenchmarkAcquireNonCanonical(b *testing.B) {
	urls := []string{"HTTP://user:pw@Host.Example:80/api/items?page=2"}
	var off atomic.Bool
	g := benchGuard(b, urls, off.Load)
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime(b)
	for range b.N {
		acquireAnswered(b, g, urls[0])
	}
	reportCPU(b, start)
}

// BenchmarkAcquireOpen measures the fast-fail path on an open endpoint: a
// clock read and the *OpenError.
func BenchmarkAcquireOpen(b *testing.B) {
	var off atomic.Bool
	for _, mode := range []string{"serial", "parallel"} {
		b.Run(mode, func(b *testing.B) {
			u := "http://dead.example:8080/api"
			g := guard.New(guard.Config{Disabled: off.Load, OpenFor: time.Hour})
			for range 2 {
				t, err := g.Acquire(u)
				if err != nil {
					b.Fatal(err)
				}
				t.Failed(errRefused)
			}
			if g.State(u) != guard.Open {
				b.Fatal("endpoint did not open")
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime(b)
			defer reportCPU(b, start)
			if mode == "serial" {
				for range b.N {
					if _, err := g.Acquire(u); err == nil {
						b.Fatal("open endpoint admitted a request")
					}
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := g.Acquire(u); err == nil {
						b.Fatal("open endpoint admitted a request")
					}
				}
			})
		})
	}
}

// BenchmarkKey keys a canonical URL, which needs no allocation.
func BenchmarkKey(b *testing.B) {
	b.ReportAllocs()
	start := cpuTime(b)
	for range b.N {
		if _, err := guard.Key("https://api.example:8443/v1/items?page=2"); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}
