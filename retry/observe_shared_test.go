package retry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
)

// gateStore answers RetryObserve only when the test lets it, recording
// each call's ids; ids starting with "ghost" are unknown.
type gateStore struct {
	nopStore
	gate  chan struct{}
	mu    sync.Mutex
	calls [][]string
	seen  map[string]int
}

func (g *gateStore) RetryObserve(_ context.Context, q StoreObserveParams) (StoreObserveResult, error) {
	g.mu.Lock()
	g.calls = append(g.calls, q.IDs)
	g.mu.Unlock()
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]ObserveResult, len(q.IDs))
	for i, id := range q.IDs {
		if len(id) > 5 && id[:5] == "ghost" {
			out[i] = ObserveResult{ID: id, Unknown: true}
			continue
		}
		g.seen[id]++
		out[i] = ObserveResult{ID: id, State: Scheduled, Priority: g.seen[id]}
	}
	return StoreObserveResult{Results: out}, nil
}

func (g *gateStore) storeCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls)
}

func TestConcurrentObservesShareWrites(t *testing.T) {
	t.Parallel()
	g := &gateStore{gate: make(chan struct{}), seen: map[string]int{}}
	s, err := New(g, Config{})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		id  string
		res ObserveResult
		err error
	}
	results := make(chan result, 64)
	observe := func(ctx context.Context, id string) {
		res, err := s.Observe(ctx, id, ObserveParams{})
		results <- result{id, res, err}
	}
	// The first call leads and blocks in the store; the others queue.
	go observe(t.Context(), "first")
	waitCalls(t, g, 1)
	ids := []string{"a", "b", "c", "a", "ghost1"} // "a" twice: two sightings
	for _, id := range ids {
		go observe(t.Context(), id)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	go observe(cancelled, "quitter")
	waitQueued(t, s, len(ids)+1)
	cancel()
	res := <-results // the quitter gives up; the queue must not stall
	if res.id != "quitter" || !errors.Is(res.err, context.Canceled) {
		t.Fatalf("first result %+v; want the cancelled call", res)
	}
	close(g.gate)
	got := map[string][]ObserveResult{}
	for range len(ids) + 1 {
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
		got[r.id] = append(got[r.id], r.res)
	}
	if len(got["a"]) != 2 || g.seen["a"] != 2 || g.seen["first"] != 1 || g.seen["quitter"] != 0 {
		t.Fatalf("results %+v; store saw %v", got, g.seen)
	}
	// first, then {a b c ghost1}, then the second a: three writes for seven calls.
	if n := g.storeCalls(); n != 3 {
		t.Fatalf("%d store calls %v; want 3", n, g.calls)
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
