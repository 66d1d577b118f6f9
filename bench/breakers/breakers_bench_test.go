package breakers_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/hostguard/hostguard/bench/breakers"
	"github.com/hostguard/hostguard/guard"
	"github.com/sony/gobreaker/v2"
)

// The benchmarks keep each library at its defaults except where a case needs
// otherwise: the open case holds every breaker open for an hour so that no
// half-open probe lands inside the timed loop, and hostguard gets room for
// 10 000 records (its default cap is 4096; the peers' maps are unbounded).
// The "hostguard-cap4096" case shows what the default cap costs when the
// working set is larger than it.

const (
	openFor     = time.Hour
	bigFleet    = 10_000
	roomForMany = 16_384
)

// refused is what a dial to a closed port returns; hostguard counts it as a
// host-level failure, and the peers count any non-nil error.
var refused error = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

var answered = &http.Response{StatusCode: http.StatusOK}

// endpoint returns the URL a caller would hold and the origin key the peers
// are handed ready-made.
func endpoint(i int) (rawURL, key string) {
	host := fmt.Sprintf("10.%d.%d.%d:8080", i>>16&255, i>>8&255, i&255)
	return "http://" + host + "/player_api.php?action=get_live_categories", "http://" + host
}

// lib is one library under test, reduced to "decide, then record an answer".
type lib struct {
	name string
	// closed returns a function that performs one admitted call on endpoint
	// i and records it as answered.
	closed func(b *testing.B, n int) func(i int)
	// open returns a function that asks an open endpoint and must be refused.
	open func(b *testing.B) func()
}

func libs() []lib {
	return []lib{
		{name: "hostguard", closed: hostguardClosed(guard.Config{MaxEndpoints: roomForMany}), open: hostguardOpen},
		{name: "hostguard-share", closed: hostguardClosed(guard.Config{MaxEndpoints: roomForMany, Share: &shareCounter}), open: hostguardOpen},
		{name: "gobreaker", closed: gobreakerClosed, open: gobreakerOpen},
		{name: "failsafe", closed: failsafeClosed, open: failsafeOpen},
	}
}

func hostguardClosed(cfg guard.Config) func(b *testing.B, n int) func(int) {
	return func(b *testing.B, n int) func(int) {
		g := guard.New(cfg)
		urls := make([]string, n)
		for i := range urls {
			urls[i], _ = endpoint(i)
		}
		return func(i int) {
			t, err := g.Acquire(urls[i%n])
			if err != nil {
				b.Fatal(err)
			}
			t.Answered()
			t.Release()
		}
	}
}

func hostguardOpen(b *testing.B) func() {
	g := guard.New(guard.Config{OpenFor: openFor})
	u, _ := endpoint(0)
	for range 2 {
		t, err := g.Acquire(u)
		if err != nil {
			b.Fatal(err)
		}
		t.Failed(refused)
		t.Release()
	}
	return func() {
		if _, err := g.Acquire(u); !errors.Is(err, guard.ErrOpen) {
			b.Fatalf("hostguard admitted a call on an open endpoint: %v", err)
		}
	}
}

func gobreakerClosed(b *testing.B, n int) func(int) {
	reg := breakers.NewGobreaker(gobreaker.Settings{})
	keys := make([]string, n)
	for i := range keys {
		_, keys[i] = endpoint(i)
	}
	return func(i int) {
		done, err := reg.Allow(keys[i%n])
		if err != nil {
			b.Fatal(err)
		}
		done(nil)
	}
}

func gobreakerOpen(b *testing.B) func() {
	reg := breakers.NewGobreaker(gobreaker.Settings{Timeout: openFor})
	_, key := endpoint(0)
	for range 6 { // the default trips on more than five consecutive failures
		done, err := reg.Allow(key)
		if err != nil {
			b.Fatal(err)
		}
		done(refused)
	}
	return func() {
		if _, err := reg.Allow(key); !errors.Is(err, gobreaker.ErrOpenState) {
			b.Fatalf("gobreaker admitted a call on an open endpoint: %v", err)
		}
	}
}

func failsafeClosed(b *testing.B, n int) func(int) {
	reg := breakers.NewFailsafe(nil)
	keys := make([]string, n)
	for i := range keys {
		_, keys[i] = endpoint(i)
	}
	return func(i int) {
		cb := reg.Breaker(keys[i%n])
		if !cb.TryAcquirePermit() {
			b.Fatal("failsafe refused a closed endpoint")
		}
		cb.RecordResult(answered)
	}
}

func failsafeOpen(b *testing.B) func() {
	reg := breakers.NewFailsafe(func() circuitbreaker.CircuitBreaker[*http.Response] {
		return circuitbreaker.NewBuilder[*http.Response]().WithDelay(openFor).Build()
	})
	_, key := endpoint(0)
	cb := reg.Breaker(key)
	if !cb.TryAcquirePermit() {
		b.Fatal("failsafe refused a new endpoint")
	}
	cb.RecordError(refused)
	return func() {
		if reg.Breaker(key).TryAcquirePermit() {
			b.Fatal("failsafe admitted a call on an open endpoint")
		}
	}
}

// countingSharer counts the guard's calls to its Sharer and Claimer: each
// would be a statement on a store.
type countingSharer struct{ calls atomic.Int64 }

func (c *countingSharer) Publish(guard.Transition) { c.calls.Add(1) }

func (c *countingSharer) Claim(context.Context, guard.ClaimParams) (guard.Lease, error) {
	c.calls.Add(1)
	return guard.Lease{Held: true}, nil
}

// shareCounter is the Sharer of "hostguard-share": sharing on, as the
// daemon runs on PostgreSQL, with the store replaced by a count.
var shareCounter countingSharer

// BenchmarkClosed is one admitted call on a healthy endpoint, serially.
// For hostguard-share it also reports the store calls per call.
func BenchmarkClosed(b *testing.B) {
	for _, l := range libs() {
		b.Run("lib="+l.name, func(b *testing.B) {
			call := l.closed(b, 1)
			before := shareCounter.calls.Load()
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				call(0)
			}
			reportCPU(b, start)
			if l.name == "hostguard-share" {
				b.ReportMetric(float64(shareCounter.calls.Load()-before)/float64(b.N), "store-calls/op")
			}
		})
	}
}

// BenchmarkOpen is one refused call on an open endpoint: the fast-fail path.
func BenchmarkOpen(b *testing.B) {
	for _, l := range libs() {
		b.Run("lib="+l.name, func(b *testing.B) {
			ask := l.open(b)
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				ask()
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkParallel is admitted calls from GOMAXPROCS goroutines, all on one
// endpoint or spread over 10 000 (each goroutine walks them from its own
// offset, so goroutines rarely meet on one record).
func BenchmarkParallel(b *testing.B) {
	for _, n := range []int{1, bigFleet} {
		cases := libs()
		if n > 4096 {
			cases = append(cases, lib{name: "hostguard-cap4096", closed: hostguardClosed(guard.Config{})})
		}
		for _, l := range cases {
			b.Run(fmt.Sprintf("endpoints=%d/lib=%s", n, l.name), func(b *testing.B) {
				call := l.closed(b, n)
				for i := range n { // create every record before timing
					call(i)
				}
				var offset atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				start := cpuTime(b)
				b.RunParallel(func(pb *testing.PB) {
					i := int(offset.Add(7919)) % n
					for pb.Next() {
						call(i)
						i++
					}
				})
				reportCPU(b, start)
			})
		}
	}
}

var sinkKey string

// BenchmarkKey is what deriving an origin key from a raw URL costs, which
// hostguard pays inside every Acquire and the peer benchmarks above do not
// (they are handed the key). "lib=net-url" is the obvious hand-written way.
func BenchmarkKey(b *testing.B) {
	raw, _ := endpoint(42)
	b.Run("lib=hostguard", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime(b)
		for b.Loop() {
			k, err := guard.Key(raw)
			if err != nil {
				b.Fatal(err)
			}
			sinkKey = k
		}
		reportCPU(b, start)
	})
	b.Run("lib=net-url", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime(b)
		for b.Loop() {
			u, err := url.Parse(raw)
			if err != nil {
				b.Fatal(err)
			}
			sinkKey = u.Scheme + "://" + u.Host
		}
		reportCPU(b, start)
	})
}
