package retry

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/retry/retrydriver"
)

// gateStore answers each RetryObserve only when the test lets it (a send
// on gate lets one through, closing it lets all), recording each call's
// ids and whether an id was ever in two calls at once; ids starting with
// "ghost" are unknown.
type gateStore struct {
	nopStore
	gate     chan struct{}
	mu       sync.Mutex
	calls    [][]string
	seen     map[string]int
	inFlight map[string]bool
	overlap  []string
}

func newGateStore() *gateStore {
	return &gateStore{gate: make(chan struct{}), seen: map[string]int{}, inFlight: map[string]bool{}}
}

func (g *gateStore) RetryObserve(_ context.Context, q retrydriver.ObserveParams) (retrydriver.ObserveResult, error) {
	g.mu.Lock()
	g.calls = append(g.calls, q.IDs)
	for _, id := range q.IDs {
		if g.inFlight[id] {
			g.overlap = append(g.overlap, id)
		}
		g.inFlight[id] = true
	}
	g.mu.Unlock()
	if g.gate != nil {
		<-g.gate
	} else {
		runtime.Gosched() // let other writes overlap this one
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]retrydriver.Observed, len(q.IDs))
	for i, id := range q.IDs {
		delete(g.inFlight, id)
		if len(id) > 5 && id[:5] == "ghost" {
			out[i] = retrydriver.Observed{ID: id, Unknown: true}
			continue
		}
		g.seen[id]++
		out[i] = retrydriver.Observed{ID: id, State: retrydriver.Scheduled, Priority: g.seen[id]}
	}
	return retrydriver.ObserveResult{Results: out}, nil
}

// RetryWriters lets shared writes overlap, as on PostgreSQL.
func (g *gateStore) RetryWriters() int { return 8 }

func (g *gateStore) storeCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls)
}

type observed struct {
	id  string
	res ObserveResult
	err error
}

// startLeaders starts s.observes.leadersMax calls, one after the other, each
// leading a write of its own that blocks in the store.
func startLeaders(t *testing.T, s *Scheduler, g *gateStore, results chan<- observed) {
	t.Helper()
	for i := range s.observes.leadersMax {
		id := fmt.Sprintf("lead%d", i)
		go func() {
			res, err := s.Observe(t.Context(), id, ObserveParams{})
			results <- observed{id, res, err}
		}()
		waitCalls(t, g, i+1)
	}
}

func TestConcurrentObservesShareWrites(t *testing.T) {
	t.Parallel()
	g := newGateStore()
	s, err := New(g, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.observes.leadersMax != maxObserveLeaders {
		t.Fatalf("a store that runs 8 writes at once gets %d shared writes in flight; want %d", s.observes.leadersMax, maxObserveLeaders)
	}
	results := make(chan observed, 64)
	observe := func(ctx context.Context, id string) {
		res, err := s.Observe(ctx, id, ObserveParams{})
		results <- observed{id, res, err}
	}
	// Every lead is taken by a write blocked in the store; the rest queue.
	startLeaders(t, s, g, results)
	ids := []string{"a", "b", "c", "a", "ghost1"} // "a" twice: two sightings
	for _, id := range ids {
		go observe(t.Context(), id)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	go observe(cancelled, "quitter")
	waitQueued(t, s, len(ids)+1)
	if n := g.storeCalls(); n != s.observes.leadersMax {
		t.Fatalf("%d writes in flight; want at most %d", n, s.observes.leadersMax)
	}
	cancel()
	res := <-results // the quitter gives up; the queue must not stall
	if res.id != "quitter" || !errors.Is(res.err, context.Canceled) {
		t.Fatalf("first result %+v; want the cancelled call", res)
	}
	close(g.gate)
	got := map[string][]int{}
	for range len(ids) + s.observes.leadersMax {
		r := <-results
		if r.id == "ghost1" {
			if !errors.Is(r.err, ErrNotFound) {
				t.Errorf("ghost: %v, want ErrNotFound", r.err)
			}
			continue
		}
		if r.err != nil {
			t.Fatalf("%s: %v", r.id, r.err)
		}
		got[r.id] = append(got[r.id], r.res.Priority)
	}
	slices.Sort(got["a"])
	if !slices.Equal(got["a"], []int{1, 2}) || g.seen["a"] != 2 || g.seen["lead0"] != 1 || g.seen["quitter"] != 0 {
		t.Fatalf("results %v; store saw %v", got, g.seen)
	}
	written := 0
	for _, c := range g.calls {
		written += len(c)
		if len(slices.Compact(slices.Sorted(slices.Values(c)))) != len(c) {
			t.Errorf("one write carries an id twice: %v", c)
		}
	}
	// Each sighting once: the leaders', a, b, c, a again and the ghost.
	if written != s.observes.leadersMax+5 || len(g.overlap) > 0 {
		t.Fatalf("writes %v (ids in two writes at once: %v); want each sighting written once, one write at a time per id", g.calls, g.overlap)
	}
}

func TestObserveTakenIntoAWriteWaitsForIt(t *testing.T) {
	t.Parallel()
	g := newGateStore()
	s, err := New(g, Config{})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan observed, 64)
	startLeaders(t, s, g, results)
	go func() {
		res, err := s.Observe(t.Context(), "y", ObserveParams{})
		results <- observed{"y", res, err}
	}()
	waitQueued(t, s, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	x := make(chan observed, 1)
	go func() {
		res, err := s.Observe(ctx, "x", ObserveParams{})
		x <- observed{"x", res, err}
	}()
	waitQueued(t, s, 2)
	// One leader's write ends; it hands its lead to y, which writes y and x.
	g.gate <- struct{}{}
	waitCalls(t, g, s.observes.leadersMax+1)
	g.mu.Lock()
	last := g.calls[s.observes.leadersMax]
	g.mu.Unlock()
	if !slices.Equal(last, []string{"x", "y"}) {
		t.Fatalf("the handed-on write carries %v; want x and y", last)
	}
	cancel() // x's sighting is being written: it must report that write
	close(g.gate)
	r := <-x
	g.mu.Lock()
	seen := g.seen["x"]
	g.mu.Unlock()
	if r.err != nil || r.res.State != Scheduled || seen != 1 {
		t.Fatalf("x: %+v; want its committed sighting, not its context's error", r)
	}
	for range s.observes.leadersMax + 1 {
		if r := <-results; r.err != nil {
			t.Fatalf("%s: %v", r.id, r.err)
		}
	}
}

// TestObserveLosesNoCall has many callers observe a few ids, some giving
// up at random moments: every call that succeeds was written once, every
// call that returns its context's error was not written, no id is in two
// writes at once, and nobody waits for ever.
func TestObserveLosesNoCall(t *testing.T) {
	t.Parallel()
	g := newGateStore()
	g.gate = nil
	s, err := New(g, Config{})
	if err != nil {
		t.Fatal(err)
	}
	const callers, calls = 8, 200
	var mu sync.Mutex
	ok := map[string]int{}
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range calls {
				// Unique per call, so that the store's count tells which
				// calls were written; the first part repeats across callers.
				id := fmt.Sprintf("id%d/%d.%d", i%5, c, i)
				ctx, cancel := context.WithCancel(t.Context())
				var stop sync.WaitGroup
				switch i % 3 {
				case 0:
					stop.Go(cancel) // gives up while the call runs
				case 1:
					cancel() // has given up already
				}
				_, err := s.Observe(ctx, id, ObserveParams{})
				stop.Wait()
				cancel()
				switch {
				case err == nil:
					mu.Lock()
					ok[id]++
					mu.Unlock()
				case !errors.Is(err, context.Canceled):
					t.Errorf("%s: %v", id, err)
				}
			}
		})
	}
	wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, n := range g.seen {
		if ok[id] != n {
			t.Errorf("%s: written %d times, reported written %d times", id, n, ok[id])
		}
	}
	for id := range ok {
		if g.seen[id] == 0 {
			t.Errorf("%s: reported written, never written", id)
		}
	}
	if len(g.overlap) > 0 {
		t.Errorf("ids in two writes at once: %v", g.overlap)
	}
	if len(ok) == 0 || len(s.observes.calls) != 0 || s.observes.leaders != 0 {
		t.Fatalf("%d calls written; queue left with %d calls and %d leaders", len(ok), len(s.observes.calls), s.observes.leaders)
	}
}

// TestRepeatedSightingsAreWrittenInOrder queues two sightings of one id
// while every lead is busy: the second is written after the first
// committed, never in a write beside it.
func TestRepeatedSightingsAreWrittenInOrder(t *testing.T) {
	t.Parallel()
	g := newGateStore()
	s, err := New(g, Config{})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan observed, 64)
	startLeaders(t, s, g, results)
	for _, p := range []int{1, 2} {
		go func() {
			res, err := s.Observe(t.Context(), "lead0", ObserveParams{Boost: p})
			results <- observed{fmt.Sprint("again", p), res, err}
		}()
		waitQueued(t, s, p)
	}
	close(g.gate)
	byName := map[string]ObserveResult{}
	for range s.observes.leadersMax + 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("%s: %v", r.id, r.err)
		}
		byName[r.id] = r.res
	}
	if byName["lead0"].Priority != 1 || byName["again1"].Priority != 2 || byName["again2"].Priority != 3 || len(g.overlap) > 0 {
		t.Fatalf("sightings of lead0 answered %+v (overlaps %v); want them written one after the other, in order", byName, g.overlap)
	}
}

func TestObserveWritesOneAtATimeByDefault(t *testing.T) {
	t.Parallel()
	s, err := New(nopStore{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.observes.leadersMax != 1 {
		t.Fatalf("a store that does not say how many writes it runs gets %d shared writes in flight; want 1", s.observes.leadersMax)
	}
}

func waitCalls(t *testing.T, g *gateStore, n int) {
	t.Helper()
	waitfor.True(t, 10*time.Second, fmt.Sprintf("the store sees %d calls", n), func() bool { return g.storeCalls() >= n })
}

func waitQueued(t *testing.T, s *Scheduler, n int) {
	t.Helper()
	waitfor.True(t, 10*time.Second, fmt.Sprintf("%d calls queue", n), func() bool {
		s.observes.mu.Lock()
		defer s.observes.mu.Unlock()
		return len(s.observes.calls) >= n
	})
}
