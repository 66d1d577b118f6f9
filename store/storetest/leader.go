package storetest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/leader"
	"github.com/jackc/pgx/v5/pgxpool"
)

// leaderT0 is a fixed instant for the store-contract cases.
var leaderT0 = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

// flakyLeaderStore fails every call on demand, as a network partition
// between one node and the database would.
type flakyLeaderStore struct {
	leader.Store
	cut atomic.Bool
}

var errPartition = errors.New("storetest: simulated partition")

func (s *flakyLeaderStore) LeaderCampaign(ctx context.Context, p leader.StoreCampaignParams) (leader.Lease, bool, error) {
	if s.cut.Load() {
		return leader.Lease{}, false, errPartition
	}
	return s.Store.LeaderCampaign(ctx, p)
}

func (s *flakyLeaderStore) LeaderRenew(ctx context.Context, p leader.StoreRenewParams) (leader.Lease, error) {
	if s.cut.Load() {
		return leader.Lease{}, errPartition
	}
	return s.Store.LeaderRenew(ctx, p)
}

func (s *flakyLeaderStore) LeaderResign(ctx context.Context, p leader.StoreResignParams) error {
	if s.cut.Load() {
		return errPartition
	}
	return s.Store.LeaderResign(ctx, p)
}

// pooled is a store with a PostgreSQL connection pool.
type pooled interface {
	Pool() *pgxpool.Pool
}

// term is one leadership as fn saw it.
type term struct {
	node    int
	term    int64
	start   time.Time
	stopped time.Time
}

// cluster runs electors and records every leadership.
type cluster struct {
	t       *testing.T
	started chan term // one per fn start
	stopped chan term // one per fn return
	active  atomic.Int32
	overlap atomic.Bool

	mu      sync.Mutex
	cancels []context.CancelFunc
	runs    []chan error
	stops   []*sync.Once
	els     []*leader.Elector
}

func newCluster(t *testing.T) *cluster {
	return &cluster{t: t, started: make(chan term, 64), stopped: make(chan term, 64)}
}

// add starts an elector on st and returns its index.
func (c *cluster) add(st leader.Store, cfg leader.Config) int {
	c.t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	el, err := leader.New(st, cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	c.mu.Lock()
	i := len(c.els)
	c.els, c.cancels, c.runs = append(c.els, el), append(c.cancels, cancel), append(c.runs, done)
	c.stops = append(c.stops, new(sync.Once))
	c.mu.Unlock()
	go func() {
		done <- el.Run(ctx, func(ctx context.Context) error {
			if c.active.Add(1) > 1 {
				c.overlap.Store(true)
			}
			tm, _ := leader.TermFromContext(ctx)
			rec := term{node: i, term: tm, start: time.Now()}
			if !el.Leading() || el.Term() != tm {
				c.t.Errorf("node %d: fn runs with Leading %v, Term %d; want true, %d", i, el.Leading(), el.Term(), tm)
			}
			c.started <- rec
			<-ctx.Done()
			rec.stopped = time.Now()
			c.active.Add(-1)
			c.stopped <- rec
			return ctx.Err()
		})
	}()
	c.t.Cleanup(func() { c.stop(i) })
	return i
}

// stop cancels elector i's Run and waits for it (once).
func (c *cluster) stop(i int) {
	c.mu.Lock()
	cancel, done, once := c.cancels[i], c.runs[i], c.stops[i]
	c.mu.Unlock()
	once.Do(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				c.t.Errorf("node %d: Run returned %v after its context ended; want nil", i, err)
			}
		case <-time.After(30 * time.Second):
			c.t.Errorf("node %d: Run did not return after its context ended", i)
		}
	})
}

func (c *cluster) next(what string, ch chan term, within time.Duration) term {
	c.t.Helper()
	select {
	case tm := <-ch:
		return tm
	case <-time.After(within):
		c.t.Fatalf("no %s within %v", what, within)
		return term{}
	}
}

func testLeader(t *testing.T, newHarness NewFunc) {
	multiNode := newHarness(t).MultiNode()
	t.Run("store contract", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		st := h.Open(t)
		const L = 10 * time.Second
		camp := func(node string, now time.Time) (leader.Lease, bool) {
			t.Helper()
			l, won, err := st.LeaderCampaign(ctx(t), leader.StoreCampaignParams{Name: "e", Node: node, Now: now, LeaseFor: L})
			if err != nil {
				t.Fatal(err)
			}
			return l, won
		}
		if !h.MultiNode() {
			for _, n := range []string{"a", "b"} {
				if l, won := camp(n, leaderT0); !won || l.Term != 1 || l.Node != n || !l.ExpiresAt.IsZero() {
					t.Fatalf("single-node campaign of %s: %+v, %v; want won, term 1, no expiry", n, l, won)
				}
			}
			return
		}
		if l, err := st.LeaderGet(ctx(t), "e"); err != nil || l.Node != "" || l.Term != 0 {
			t.Fatalf("unknown election: %+v, %v; want free, term 0", l, err)
		}
		l, won := camp("a", leaderT0)
		if !won || l.Node != "a" || l.Term != 1 || !l.ExpiresAt.Equal(leaderT0.Add(L)) {
			t.Fatalf("first campaign %+v, %v", l, won)
		}
		if l, won := camp("b", leaderT0.Add(time.Second)); won || l.Node != "a" || l.Term != 1 {
			t.Fatalf("campaign against a live lease %+v, %v; want a's lease, not won", l, won)
		}
		renew := func(node string, term int64, now time.Time) (leader.Lease, error) {
			return st.LeaderRenew(ctx(t), leader.StoreRenewParams{Name: "e", Node: node, Term: term, Now: now, LeaseFor: L})
		}
		if l, err := renew("a", 1, leaderT0.Add(L/2)); err != nil || !l.ExpiresAt.Equal(leaderT0.Add(L+L/2)) {
			t.Fatalf("renew %+v, %v", l, err)
		}
		if _, err := renew("b", 1, leaderT0.Add(L/2)); !errors.Is(err, leader.ErrLost) {
			t.Fatalf("renew by a non-holder: %v; want ErrLost", err)
		}
		if _, err := renew("a", 7, leaderT0.Add(L/2)); !errors.Is(err, leader.ErrLost) {
			t.Fatalf("renew with a wrong term: %v; want ErrLost", err)
		}
		// Expired: b takes it in term 2; a can no longer renew.
		expired := leaderT0.Add(L + L/2)
		if l, won := camp("b", expired); !won || l.Node != "b" || l.Term != 2 {
			t.Fatalf("campaign after expiry %+v, %v; want b in term 2", l, won)
		}
		if _, err := renew("a", 1, expired); !errors.Is(err, leader.ErrLost) {
			t.Fatalf("renew of a taken lease: %v; want ErrLost", err)
		}
		// Resigning with a stale term does nothing; with the right one it
		// frees the lease, and the next holder's term is higher.
		resign := func(node string, term int64) {
			t.Helper()
			if err := st.LeaderResign(ctx(t), leader.StoreResignParams{Name: "e", Node: node, Term: term, Now: expired}); err != nil {
				t.Fatal(err)
			}
		}
		resign("a", 1)
		if l, _ := st.LeaderGet(ctx(t), "e"); l.Node != "b" {
			t.Fatalf("a stale resign freed the lease: %+v", l)
		}
		resign("b", 2)
		if l, _ := st.LeaderGet(ctx(t), "e"); l.Node != "" || l.Term != 2 {
			t.Fatalf("after resign %+v; want free, term kept", l)
		}
		if l, won := camp("a", expired); !won || l.Term != 3 {
			t.Fatalf("campaign of a free lease %+v, %v; want term 3", l, won)
		}
		if l, won := camp("a", expired); !won || l.Term != 4 {
			t.Fatalf("re-campaign by the holder %+v, %v; want a new term 4", l, won)
		}
		if l, _ := st.LeaderGet(ctx(t), "other"); l.Node != "" {
			t.Fatalf("elections are independent: %+v", l)
		}
	})

	if !multiNode {
		t.Run("single node always leads", func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			c := newCluster(t)
			for range 2 {
				c.add(h.Open(t), leader.Config{LeaseFor: 300 * time.Millisecond})
			}
			for range 2 {
				if tm := c.next("leadership", c.started, 10*time.Second); tm.term != 1 {
					t.Fatalf("term %d; want 1", tm.term)
				}
			}
		})
		return
	}

	t.Run("one leader; a stopped leader resigns and another takes over", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		const L = time.Second
		c := newCluster(t)
		for range 3 {
			c.add(h.Open(t), leader.Config{Name: "loops", LeaseFor: L, RenewEvery: L / 8})
		}
		first := c.next("first leader", c.started, 10*time.Second)
		// Give the others several chances to (wrongly) win.
		select {
		case tm := <-c.started:
			t.Fatalf("node %d leads in term %d while node %d leads", tm.node, tm.term, first.node)
		case <-time.After(L / 2):
		}
		stopAt := time.Now()
		c.stop(first.node)
		c.next("old leader's stop", c.stopped, time.Second)
		l, err := c.els[(first.node+1)%3].Current(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if l.Node == c.els[first.node].NodeID() {
			t.Fatalf("after stopping, the lease still names the old leader: %+v", l)
		}
		second := c.next("second leader", c.started, 10*time.Second)
		if second.node == first.node || second.term <= first.term {
			t.Fatalf("second leadership %+v after %+v; want another node, higher term", second, first)
		}
		if took := second.start.Sub(stopAt); took >= L {
			t.Fatalf("takeover after a resign took %v; want well within the lease (%v)", took, L)
		}
		if c.overlap.Load() {
			t.Fatal("two leaders ran at once")
		}
	})

	t.Run("a dead leader is replaced after its lease", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		const L = time.Second
		c := newCluster(t)
		stores := make([]interface{ Close() error }, 3)
		for i := range 3 {
			st := h.Open(t)
			stores[i] = st
			c.add(st, leader.Config{Name: "loops", LeaseFor: L, RenewEvery: L / 2}) // widest margin
		}
		first := c.next("first leader", c.started, 10*time.Second)
		// Close the leader's store handle: no resign can reach the database.
		killedAt := time.Now()
		stores[first.node].Close()
		old := c.next("old leader's stop", c.stopped, 5*time.Second)
		second := c.next("second leader", c.started, 10*time.Second)
		if second.node == first.node || second.term <= first.term {
			t.Fatalf("second leadership %+v after %+v; want another node, higher term", second, first)
		}
		if !old.stopped.Before(second.start) {
			t.Fatalf("old leader stopped at %v, after the new one started at %v", old.stopped, second.start)
		}
		if took := second.start.Sub(killedAt); took > 2*L {
			t.Fatalf("takeover after a crash took %v; want about the lease (%v)", took, L)
		}
		if c.overlap.Load() {
			t.Fatal("two leaders ran at once")
		}
	})

	t.Run("a killed connection does not cost a live leader its lease", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		// A long lease: reconnecting under load can take a while, and this
		// case is about the lease surviving, not about its length.
		const L = 3 * time.Second
		c := newCluster(t)
		pools := make([]pooled, 2)
		for i := range pools {
			st := h.Open(t)
			p, ok := st.(pooled)
			if !ok {
				t.Fatalf("%s store does not expose its pool", h.Engine)
			}
			pools[i] = p
			c.add(st, leader.Config{Name: "loops", LeaseFor: L, RenewEvery: L / 5})
		}
		first := c.next("first leader", c.started, 10*time.Second)
		killer := pools[1-first.node].Pool()
		for round := range 2 {
			var pids []uint32
			for _, conn := range pools[first.node].Pool().AcquireAllIdle(ctx(t)) {
				pids = append(pids, conn.Conn().PgConn().PID())
				conn.Release()
			}
			if len(pids) == 0 {
				t.Fatalf("round %d: the leader's pool has no idle connection to kill", round)
			}
			for _, pid := range pids {
				if _, err := killer.Exec(ctx(t), `SELECT pg_terminate_backend($1)`, int64(pid)); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case tm := <-c.stopped:
				t.Fatalf("round %d: node %d stopped leading (term %d) after its connections were killed", round, tm.node, tm.term)
			case tm := <-c.started:
				t.Fatalf("round %d: node %d took over in term %d", round, tm.node, tm.term)
			case <-time.After(L / 3):
			}
		}
		if !c.els[first.node].Leading() || c.els[first.node].Term() != first.term {
			t.Fatalf("leader lost its term %d", first.term)
		}
	})

	t.Run("a leader that cannot renew stops before its lease expires", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		// RenewEvery = L/2 leaves the widest margin (L/4) between giving up
		// and the lease's expiry, which this case measures from outside.
		const L = time.Second
		c := newCluster(t)
		flaky := make([]*flakyLeaderStore, 3)
		for i := range 3 {
			flaky[i] = &flakyLeaderStore{Store: h.Open(t)}
			c.add(flaky[i], leader.Config{Name: "loops", LeaseFor: L, RenewEvery: L / 2})
		}
		var terms []int64
		prev := c.next("first leader", c.started, 10*time.Second)
		terms = append(terms, prev.term)
		for range 2 {
			flaky[prev.node].cut.Store(true)
			lost := c.next("stop of the partitioned leader", c.stopped, 5*time.Second)
			if lost.node != prev.node {
				t.Fatalf("node %d stopped; want the partitioned node %d", lost.node, prev.node)
			}
			if c.els[prev.node].Leading() {
				t.Fatal("Leading() is still true after the work was cancelled")
			}
			// The lease in the store is still the old one: it must not have
			// expired when the work was cancelled.
			l, err := flaky[(prev.node+1)%3].Store.LeaderGet(ctx(t), "loops")
			if err != nil {
				t.Fatal(err)
			}
			if l.Term == prev.term && !lost.stopped.Before(l.ExpiresAt) {
				t.Fatalf("work cancelled at %v, not before the lease expired at %v", lost.stopped, l.ExpiresAt)
			}
			next := c.next("next leader", c.started, 10*time.Second)
			if next.term <= prev.term {
				t.Fatalf("term went from %d to %d", prev.term, next.term)
			}
			if next.node == prev.node {
				t.Fatalf("the partitioned node %d leads again", next.node)
			}
			if !lost.stopped.Before(next.start) {
				t.Fatalf("partitioned leader stopped at %v, after the next one started at %v", lost.stopped, next.start)
			}
			flaky[prev.node].cut.Store(false)
			terms = append(terms, next.term)
			prev = next
		}
		if c.overlap.Load() {
			t.Fatal("two leaders ran at once")
		}
		t.Logf("terms %v", terms)
	})
}
