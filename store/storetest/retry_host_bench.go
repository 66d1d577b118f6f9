package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// BenchHost is the host whose items the wake benchmarks park.
const BenchHost = "parked.example"

// benchParkStep is the parked items' ladder step: far enough that the
// wakes below, whose clock runs ahead of the claims' real one, never make
// them due for the claims.
const benchParkStep = 365 * 24 * time.Hour

// wakeClock is the wake benchmarks' clock: each wake runs at a moment two
// minutes before the last one, so that the items the last wake left due
// within its minute are all beyond the next one's and it moves every item
// again: each wake does the whole work of a first wake.
type wakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *wakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *wakeClock) back() {
	c.mu.Lock()
	c.now = c.now.Add(-2 * time.Minute)
	c.mu.Unlock()
}

// ParkForWake stores n items of BenchHost parked after a timeout (a year
// away) and returns a function that wakes them, on a clock 300 days
// ahead, and says how many the wake counted and how long the store took,
// after the wake returned, to finish it in the background (0 for a
// store that finishes before it returns). Setting up 100 000 takes tens
// of seconds.
func ParkForWake(b *testing.B, st retry.Store, n int) (wake func() (woken int, rest time.Duration)) {
	b.Helper()
	c := ctx(b)
	park, err := retry.New(st, retry.Config{Default: retry.Ladder{benchParkStep}, Jitter: -1})
	if err != nil {
		b.Fatal(err)
	}
	ParkItems(b, park, BenchHost, n, func(i int) string { return fmt.Sprintf("parked%034d", i) })
	clock := &wakeClock{now: time.Now().Add(300 * 24 * time.Hour)}
	waker, err := retry.New(st, retry.Config{Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	waiter, _ := st.(wakeWaiter)
	return func() (int, time.Duration) {
		clock.back()
		res, err := waker.WakeHost(c, BenchHost)
		if err != nil {
			b.Fatal(err)
		}
		returned := time.Now()
		if waiter != nil {
			if err := waiter.WaitWakes(c); err != nil {
				b.Fatal(err)
			}
		}
		return res.Woken, time.Since(returned)
	}
}

// wakeWaiter is a Store that finishes large wakes in the background
// (PostgreSQL): WaitWakes returns when they are done.
type wakeWaiter interface {
	WaitWakes(ctx context.Context) error
}

// ParkItems adds n items of host, named by id, and fails each once with a
// timeout, so that they wait out their first step parked behind host.
// Nothing else may be due on s.
func ParkItems(tb testing.TB, s *retry.Scheduler, host string, n int, id func(int) string) {
	tb.Helper()
	c := ctx(tb)
	batch := make([]retry.NewItem, 0, retry.MaxAdd)
	for i := range n {
		batch = append(batch, retry.NewItem{ID: id(i), Host: host})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.Add(c, batch...); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for parked := 0; parked < n; {
		ls, err := s.Claim(c, retry.ClaimParams{N: retry.MaxClaim, Lease: time.Hour})
		if err != nil || len(ls) == 0 {
			tb.Fatalf("parking: claim got %d, %v", len(ls), err)
		}
		out := make([]retry.Outcome, len(ls))
		for i, l := range ls {
			out[i] = retry.Outcome{Lease: l.Ref(), Op: retry.OpFail, Class: "timeout"}
		}
		errs, err := s.Settle(c, out)
		if err != nil || errors.Join(errs...) != nil {
			tb.Fatalf("parking: settle: %v %v", err, errors.Join(errs...))
		}
		parked += len(ls)
	}
}

// BenchWakeHost measures the wake of n parked items of one host; b.N
// counts wakes, each of all n items. ns/op is the whole wake; the
// metrics split it into the time until WakeHost returned (return-s) and
// the time the store then took to finish in the background (rest-s).
func BenchWakeHost(b *testing.B, st retry.Store, n int) {
	b.Helper()
	wake := ParkForWake(b, st, n)
	var returned, rest time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		got, r := wake()
		if got != n {
			b.Fatalf("a wake moved %d items, want %d", got, n)
		}
		returned += time.Since(t0) - r
		rest += r
	}
	b.ReportMetric(returned.Seconds()/float64(b.N), "return-s")
	b.ReportMetric(rest.Seconds()/float64(b.N), "rest-s")
}

// BenchClaimDuringWake measures single-item claims (each then succeeded)
// for a while with nothing else running, then for as long again while
// wakes of n parked items run back to back, and reports each phase's
// median and p99 claim time and their ratio. Both phases are bounded in
// time and in claims. b.N is ignored beyond the first run: run it with
// -benchtime=1x.
func BenchClaimDuringWake(b *testing.B, st retry.Store, n int, phase time.Duration) {
	b.Helper()
	c := ctx(b)
	wake := ParkForWake(b, st, n)
	worker, err := retry.New(st, retry.Config{})
	if err != nil {
		b.Fatal(err)
	}
	const maxClaims = 200_000
	due := make([]retry.NewItem, 0, retry.MaxAdd)
	for i := range 2 * retry.MaxAdd {
		due = append(due, retry.NewItem{ID: fmt.Sprintf("due%037d", i)})
		if len(due) == cap(due) {
			if _, err := worker.Add(c, due...); err != nil {
				b.Fatal(err)
			}
			due = due[:0]
		}
	}
	measure := func() []time.Duration {
		var lat []time.Duration
		end := time.Now().Add(phase)
		for time.Now().Before(end) && len(lat) < maxClaims {
			t0 := time.Now()
			ls, err := worker.Claim(c, retry.ClaimParams{N: 1, Lease: time.Minute})
			lat = append(lat, time.Since(t0))
			if err != nil || len(ls) != 1 {
				b.Fatalf("claim: %d leases, %v", len(ls), err)
			}
			if err := worker.Succeed(c, ls[0].Ref()); err != nil {
				b.Fatal(err)
			}
		}
		return lat
	}
	b.ResetTimer()
	idle := measure()
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		wakes := 0
		for {
			select {
			case <-stop:
				done <- wakes
				return
			default:
			}
			wake()
			wakes++
		}
	}()
	busy := measure()
	close(stop)
	wakes := <-done
	b.StopTimer()
	q := func(lat []time.Duration, p float64) float64 {
		s := slices.Clone(lat)
		slices.Sort(s)
		return float64(s[min(int(p*float64(len(s))), len(s)-1)].Microseconds()) / 1000
	}
	b.ReportMetric(q(idle, 0.5), "idle-p50-ms")
	b.ReportMetric(q(idle, 0.99), "idle-p99-ms")
	b.ReportMetric(q(busy, 0.5), "waking-p50-ms")
	b.ReportMetric(q(busy, 0.99), "waking-p99-ms")
	b.ReportMetric(q(busy, 0.99)/q(idle, 0.99), "p99-ratio")
	b.ReportMetric(float64(wakes), "wakes")
	b.ReportMetric(float64(len(busy)), "claims-waking")
}
