package guard_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
)

func ep(n int) string { return fmt.Sprintf("http://e%d.test/", n) }

// touch acquires and answers one ticket on each URL.
func touch(t *testing.T, g *guard.Guard, urls ...string) {
	t.Helper()
	for _, u := range urls {
		tk, err := g.Acquire(u)
		if err != nil {
			t.Fatalf("Acquire(%s): %v", u, err)
		}
		tk.Answered()
	}
}

func hold(t *testing.T, g *guard.Guard, u string) *guard.Ticket {
	t.Helper()
	tk, err := g.Acquire(u)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", u, err)
	}
	return tk
}

func failTwice(t *testing.T, g *guard.Guard, u string) {
	t.Helper()
	for range 2 {
		hold(t, g, u).Failed(errRefused)
	}
}

func held(g *guard.Guard) map[string]bool {
	m := map[string]bool{}
	for _, st := range g.Endpoints() {
		m[st.Endpoint+"/"] = true
	}
	return m
}

func TestCapEvictsIdleClosedFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{MaxEndpoints: 4})
	failTwice(t, b.g, ep(1))               // open
	busy := hold(t, b.g, ep(2))            // ticket out
	hold(t, b.g, ep(3)).Failed(errRefused) // closed, with a streak
	touch(t, b.g, ep(4))                   // closed, nothing known
	touch(t, b.g, ep(5), ep(5))            // over the cap, seen twice: the door lets it in
	if n := b.g.Len(); n != 4 {
		t.Fatalf("Len = %d, want the cap, 4", n)
	}
	h := held(b.g)
	if h[ep(4)] || !h[ep(1)] || !h[ep(2)] || !h[ep(3)] || !h[ep(5)] {
		t.Fatalf("records held %v; want e4 evicted and every other kept", h)
	}
	if st := b.g.State(ep(1)); st != guard.Open {
		t.Errorf("open record lost its state: %v", st)
	}

	// A record that holds no evidence goes first, even the newest.
	touch(t, b.g, ep(6), ep(6))
	h = held(b.g)
	if h[ep(5)] || !h[ep(1)] || !h[ep(2)] || !h[ep(3)] || !h[ep(6)] {
		t.Fatalf("records held %v; want e5 evicted", h)
	}

	// Next is the closed record with a streak, not the open one.
	busy6 := hold(t, b.g, ep(6))
	touch(t, b.g, ep(7), ep(7))
	h = held(b.g)
	if h[ep(3)] || !h[ep(1)] || !h[ep(2)] || !h[ep(6)] || !h[ep(7)] {
		t.Fatalf("records held %v; want e3 evicted before the open e1", h)
	}

	// With no closed record left, the open one goes before a busy one.
	busy7 := hold(t, b.g, ep(7))
	touch(t, b.g, ep(8), ep(8))
	h = held(b.g)
	if h[ep(1)] || !h[ep(2)] || !h[ep(6)] || !h[ep(7)] || !h[ep(8)] {
		t.Fatalf("records held %v; want the open e1 evicted, the busy ones kept", h)
	}

	// Every record busy: a new endpoint is let through untracked, and
	// nothing it reports creates a record.
	busy8 := hold(t, b.g, ep(8))
	for range 3 {
		tk := hold(t, b.g, ep(9))
		if tk.Endpoint() != "http://e9.test" {
			t.Errorf("untracked ticket endpoint %q", tk.Endpoint())
		}
		tk.Failed(errRefused)
	}
	if st := b.g.State(ep(9)); st != guard.Closed || b.g.Len() != 4 || held(b.g)[ep(9)] {
		t.Fatalf("untracked endpoint: state %v, Len %d, held %v", st, b.g.Len(), held(b.g))
	}
	for _, st := range b.g.Endpoints() {
		if st.TicketsOut != 1 {
			t.Errorf("%s has %d tickets out, want 1", st.Endpoint, st.TicketsOut)
		}
	}

	// Once tickets are back and the search pause has passed, new
	// endpoints are tracked again.
	for _, tk := range []*guard.Ticket{busy, busy6, busy7, busy8} {
		tk.Release()
	}
	b.clk.Advance(time.Second)
	failTwice(t, b.g, ep(10))
	if st := b.g.State(ep(10)); st != guard.Open {
		t.Errorf("e10 after room was made: %v, want open", st)
	}
}

func TestPruneIdleClosed(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Minute
	b := setup(t, guard.Config{IdleTTL: ttl})
	touch(t, b.g, ep(1), ep(2))
	failTwice(t, b.g, ep(3))
	busy := hold(t, b.g, ep(4))
	hold(t, b.g, ep(5)).Failed(errRefused) // closed with a streak: still closed

	if n := b.g.Prune(); n != 0 {
		t.Fatalf("Prune right after use removed %d", n)
	}
	b.clk.Advance(ttl / 2)
	touch(t, b.g, ep(2)) // e2 stays in use
	b.clk.Advance(ttl/2 - 1)
	if n := b.g.Prune(); n != 0 {
		t.Fatalf("Prune before IdleTTL removed %d", n)
	}
	b.clk.Advance(1)
	if n := b.g.Prune(); n != 2 {
		t.Fatalf("Prune at IdleTTL removed %d, want 2 (e1, e5)", n)
	}
	h := held(b.g)
	if h[ep(1)] || h[ep(5)] || !h[ep(2)] || !h[ep(3)] || !h[ep(4)] {
		t.Fatalf("records held %v; want idle closed e1 and e5 gone, e2 (used), e3 (open), e4 (ticket out) kept", h)
	}
	b.clk.Advance(10 * ttl)
	b.g.Prune()
	h = held(b.g)
	if h[ep(2)] || !h[ep(3)] || !h[ep(4)] {
		t.Fatalf("records held %v; want e2 gone at last, open e3 and busy e4 kept", h)
	}
	busy.Release()
	b.g.Prune() // sees the release
	b.clk.Advance(ttl)
	b.g.Prune()
	if h = held(b.g); h[ep(4)] || !h[ep(3)] || b.g.Len() != 1 {
		t.Fatalf("records held %v (Len %d); want only the open e3", h, b.g.Len())
	}
}

func TestPruneRunsWhenRecordsAreCreated(t *testing.T) {
	t.Parallel()
	const ttl = 8 * time.Minute
	b := setup(t, guard.Config{IdleTTL: ttl})
	touch(t, b.g, ep(1))
	b.clk.Advance(ttl / 4)
	touch(t, b.g, ep(2)) // sweeps: e1 was used, so it is kept and timed from now
	b.clk.Advance(ttl)
	touch(t, b.g, ep(3)) // sweeps: e1 has been idle for IdleTTL
	h := held(b.g)
	if h[ep(1)] || !h[ep(2)] || !h[ep(3)] || b.g.Len() != 2 {
		t.Fatalf("records held %v (Len %d); want e1 pruned, e2 and e3 kept", h, b.g.Len())
	}
}

// TestStreamAboveTheCapKeepsEvidence sends a long stream of new, answered
// endpoints, each seen twice, through a small guard holding open, streaked
// and busy records: the stream only ever displaces its own kind, the cap
// holds throughout, and every endpoint of the stream is tracked once the
// door has let it in.
func TestStreamAboveTheCapKeepsEvidence(t *testing.T) {
	t.Parallel()
	const max = 64
	b := setup(t, guard.Config{MaxEndpoints: max})
	var keep []string
	for i := range 8 {
		u := fmt.Sprintf("http://open%d.test/", i)
		failTwice(t, b.g, u)
		keep = append(keep, u)
	}
	for i := range 4 {
		u := fmt.Sprintf("http://streak%d.test/", i)
		hold(t, b.g, u).Failed(errRefused)
		keep = append(keep, u)
	}
	var busy []*guard.Ticket
	for i := range 4 {
		u := fmt.Sprintf("http://busy%d.test/", i)
		busy = append(busy, hold(t, b.g, u))
		keep = append(keep, u)
	}
	for i := range 3000 {
		u := fmt.Sprintf("http://stream%d.test/", i)
		touch(t, b.g, u)
		tk := hold(t, b.g, u)
		if tk.Endpoint() == "" || b.g.Len() > max {
			t.Fatalf("stream %d: Len %d", i, b.g.Len())
		}
		tk.Answered()
		if !held(b.g)[u] {
			t.Fatalf("stream %d went untracked", i)
		}
	}
	h := held(b.g)
	for _, u := range keep {
		if !h[u] {
			t.Errorf("%s was evicted by a stream of endpoints without evidence", u)
		}
	}
	for _, tk := range busy {
		tk.Release()
	}
}
