package guard_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// hub is an in-memory cluster for the sharing tables: it hands each
// guard's published transitions to every other guard at once (unless the
// link is cut) and keeps one lease per endpoint, as store/postgres does in
// a table.
type hub struct {
	mu     sync.Mutex
	guards map[string]*guard.Guard
	cut    map[string]bool // node -> its publications reach nobody
	log    []string
	leases map[string]hubLease
	ttl    time.Duration
	delay  time.Duration // how long a claim takes ("slow-claims")
}

type hubLease struct {
	node    string
	until   time.Time
	expires time.Time
}

func newHub(ttl time.Duration) *hub {
	return &hub{guards: map[string]*guard.Guard{}, cut: map[string]bool{}, leases: map[string]hubLease{}, ttl: ttl}
}

// node is one guard's Sharer.
type node struct {
	h    *hub
	name string
}

func (n node) Publish(t guard.Transition) {
	h := n.h
	h.mu.Lock()
	entry := fmt.Sprintf("%s %s", n.name, t.Change)
	if t.Change == guard.ChangeOpened {
		entry += fmt.Sprintf(" until %v", t.Until.Sub(bubbleStart))
	}
	h.log = append(h.log, entry)
	if l, ok := h.leases[t.Endpoint]; ok && l.node == n.name || t.Change != guard.ChangeOpened {
		delete(h.leases, t.Endpoint)
	}
	var to []*guard.Guard
	if !h.cut[n.name] {
		for name, g := range h.guards {
			if name != n.name {
				to = append(to, g)
			}
		}
	}
	h.mu.Unlock()
	for _, g := range to {
		g.Apply(t)
	}
}

func (n node) Claim(_ context.Context, p guard.ClaimParams) (guard.Lease, error) {
	h := n.h
	h.mu.Lock()
	delay := h.delay
	h.mu.Unlock()
	time.Sleep(delay)
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	l, ok := h.leases[p.Endpoint]
	if !ok || !now.Before(l.expires) || l.until.Before(p.Until) {
		l = hubLease{node: n.name, until: p.Until, expires: now.Add(h.ttl)}
		h.leases[p.Endpoint] = l
		h.log = append(h.log, n.name+" lease")
	}
	return guard.Lease{Held: l.node == n.name, Expires: l.expires}, nil
}

// bubbleStart is the fake clock's reading when a synctest bubble starts.
var bubbleStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// crow is one row of a cluster table: a step on one node, or a check of
// the hub ("published" wants the hub's log since the last such row, joined
// by "; "), or a cut of node's link ("cut").
type crow struct {
	node string
	step
}

// TestSharingRules drives three guards (A, B, C) joined by a hub, each with
// a fake Probe, in a synctest bubble: default configuration (Threshold 2,
// OpenFor 30s), leases of 5s.
func TestSharingRules(t *testing.T) {
	t.Parallel()
	const other = "http://other.test/"
	// network is an answer from another endpoint, which lets a node
	// publish its openings.
	network := func(n string, at time.Duration) []crow {
		return []crow{
			{n, step{at: at, do: "acquire", tk: "net" + n, url: other}},
			{n, step{at: at, do: "answer", tk: "net" + n, url: other}},
		}
	}
	tripA := func(at time.Duration) []crow {
		return []crow{
			{"A", step{at: at, do: "acquire", tk: "a1"}}, {"A", step{at: at, do: "fail", tk: "a1", want: "timeout"}},
			{"A", step{at: at + s, do: "acquire", tk: "a2"}}, {"A", step{at: at + s, do: "fail", tk: "a2", want: "timeout"}},
		}
	}
	cat := func(parts ...[]crow) []crow { return slices.Concat(parts...) }
	// seenUpOn has node n hear the default endpoint answer in 2s at 0.
	seenUpOn := func(n string) []crow {
		return []crow{
			{n, step{at: 0, do: "acquire", tk: "up"}},
			{n, step{at: 0, do: "answer-after", tk: "up", want: "2s"}},
		}
	}
	// waiting are the tables whose guards have a TrialWait.
	waiting := map[string]bool{
		"a caller refused the lease waits for the holder's trial, whose answer admits it": true,
		"... and whose failure refuses it by the opening that follows":                    true,
		"a caller that finds the cluster's claim out waits through it for the probe":      true,
	}
	tables := map[string][]crow{
		"an opening is published once and adopted, up to its until": cat(network("A", 0), tripA(0), []crow{
			{"", step{at: s, do: "published", want: "A opened until 31s"}},
			{"B", step{at: s, do: "acquire", want: "open 30s"}},
			{"C", step{at: 2 * s, do: "state", want: "open"}},
			{"C", step{at: 30 * s, do: "acquire", want: "open 1s"}},
			// Closed-path traffic and a failure that does not trip
			// publish nothing.
			{"B", step{at: 2 * s, do: "acquire", tk: "o", url: other}},
			{"B", step{at: 2 * s, do: "answer", tk: "o", url: other}},
			{"B", step{at: 2 * s, do: "acquire", tk: "f", url: other}},
			{"B", step{at: 2 * s, do: "fail", tk: "f", url: other}},
			{"", step{at: 2 * s, do: "published", want: ""}},
		}),
		"no publication while the node's own network is down": cat(tripA(0), []crow{
			{"A", step{at: s, do: "state", want: "open"}},
			{"", step{at: s, do: "published", want: ""}},
			{"B", step{at: s, do: "state", want: "closed"}},
		}),
		"an answer older than 30s does not vouch for the network": cat(network("A", 0), tripA(31*s), []crow{
			{"A", step{at: 32 * s, do: "state", want: "open"}},
			{"", step{at: 32 * s, do: "published", want: ""}},
		}),
		"a node that saw the host answer after the failures ignores the opening": cat(network("A", 0), []crow{
			{"A", step{at: 0, do: "acquire", tk: "a1"}}, {"A", step{at: 0, do: "fail", tk: "a1", want: "timeout"}},
			// B hears from the host after A's first failure.
			{"B", step{at: s, do: "acquire", tk: "b"}}, {"B", step{at: s, do: "answer", tk: "b"}},
			// C last heard from it well before.
			{"A", step{at: 2 * s, do: "acquire", tk: "a2"}}, {"A", step{at: 2 * s, do: "fail", tk: "a2", want: "timeout"}},
			{"", step{at: 2 * s, do: "published", want: "A opened until 32s"}},
			{"B", step{at: 2 * s, do: "acquire", tk: "b2", want: "ok"}},
			{"C", step{at: 2 * s, do: "state", want: "open"}},
		}),
		// A timeout is news about when its request was sent: B heard
		// the host answer after A's first request went out, though
		// before it timed out, so B does not adopt the opening. Dated
		// when reported (Since 30s), B's answer at 20s would be older
		// and B would refuse a host it saw answering.
		"a timeout's evidence dates from when its request was sent": cat([]crow{
			{"A", step{at: 0, do: "acquire", tk: "a1"}},
			{"B", step{at: 20 * s, do: "acquire", tk: "b"}}, {"B", step{at: 20 * s, do: "answer", tk: "b"}},
			{"A", step{at: 30 * s, do: "fail", tk: "a1", want: "timeout-after-30s"}},
			{"A", step{at: 31 * s, do: "acquire", tk: "a2"}},
		}, network("A", 50*s), []crow{
			{"A", step{at: 61 * s, do: "fail", tk: "a2", want: "timeout-after-30s"}},
			{"", step{at: 61 * s, do: "published", want: "A opened until 1m31s"}},
			{"A", step{at: 61 * s, do: "state", want: "open"}},
			{"B", step{at: 61 * s, do: "acquire", tk: "b2", want: "ok"}},
			{"C", step{at: 61 * s, do: "state", want: "open"}},
		}),
		// Only an answer proven newer than the send of the first failing
		// request keeps a node from adopting: B heard the host 100 ms
		// before A's request went out and hung, so A's evidence is the
		// newer and B adopts it, though the two are closer than the
		// coarse clock's step.
		"an answer just before the failing request went out does not block adoption": cat([]crow{
			{"B", step{at: 10 * s, do: "acquire", tk: "b"}}, {"B", step{at: 10 * s, do: "answer", tk: "b"}},
			{"A", step{at: 10*s + 100*time.Millisecond, do: "acquire", tk: "a1"}},
			{"A", step{at: 40*s + 100*time.Millisecond, do: "fail", tk: "a1", want: "timeout-after-30s"}},
			{"A", step{at: 40*s + 100*time.Millisecond, do: "acquire", tk: "a2"}},
		}, network("A", 60*s), []crow{
			{"A", step{at: 70*s + 100*time.Millisecond, do: "fail", tk: "a2", want: "timeout-after-30s"}},
			{"", step{at: 70*s + 100*time.Millisecond, do: "published", want: "A opened until 1m40.1s"}},
			{"B", step{at: 70*s + 100*time.Millisecond, do: "state", want: "open"}},
		}),
		// The epoch rule by time: a guard that keeps answer times drops
		// a failure whose request went out before the host's latest
		// answer, so requests sent before a recovery cannot re-open the
		// host after it was seen answering.
		"a failure sent before the latest answer does not count": cat([]crow{
			{"A", step{at: 0, do: "acquire", tk: "a1"}},
			{"A", step{at: 0, do: "acquire", tk: "a2"}},
			{"A", step{at: 20 * s, do: "acquire", tk: "ok"}}, {"A", step{at: 20 * s, do: "answer", tk: "ok"}},
		}, network("A", 25*s), []crow{
			{"A", step{at: 30 * s, do: "fail", tk: "a1", want: "timeout-after-30s"}},
			{"A", step{at: 30 * s, do: "acquire", tk: "a3"}},
			{"A", step{at: 31 * s, do: "fail", tk: "a2", want: "timeout-after-31s"}},
			{"A", step{at: 31 * s, do: "fail", tk: "a3", want: "timeout-after-1s"}},
			{"A", step{at: 31 * s, do: "state", want: "closed"}},
			// a3 went out after the answer and counts; a4 trips.
			{"A", step{at: 31 * s, do: "acquire", tk: "a4"}},
			{"A", step{at: 32 * s, do: "fail", tk: "a4", want: "timeout-after-1s"}},
			{"A", step{at: 32 * s, do: "state", want: "open"}},
			{"", step{at: 32 * s, do: "published", want: "A opened until 1m2s"}},
		}),
		"one probe for the cluster; its answer closes every node": cat(network("A", 0), tripA(0), []crow{
			{"B", step{at: 10 * s, do: "acquire", want: "open 21s"}},
			{"C", step{at: 10 * s, do: "acquire", want: "open 21s"}},
			{"A", step{at: 10 * s, do: "acquire", want: "open 21s"}},
			{"", step{at: 31 * s, do: "published", want: "A opened until 31s; ? lease"}},
			{"", step{at: 31 * s, do: "probing", want: "1"}},
			{"A", step{at: 32 * s, do: "acquire", want: "open 0s"}},
			{"B", step{at: 32 * s, do: "acquire", want: "open 0s"}},
			{"C", step{at: 32 * s, do: "acquire", want: "open 0s"}},
			{"", step{at: 32 * s, do: "probe-any", want: "answer"}},
			{"", step{at: 32 * s, do: "published", want: "? answered"}},
			{"A", step{at: 32 * s, do: "state", want: "closed"}},
			{"B", step{at: 32 * s, do: "state", want: "closed"}},
			{"C", step{at: 32 * s, do: "acquire", want: "ok"}},
			{"", step{at: 32 * s, do: "probing", want: "0"}},
		}),
		"a failed probe re-opens every node with the holder's until": cat(network("A", 0), network("B", 0), network("C", 0), tripA(0), []crow{
			{"B", step{at: 10 * s, do: "acquire", want: "open 21s"}},
			{"A", step{at: 10 * s, do: "acquire", want: "open 21s"}},
			{"", step{at: 31 * s, do: "probing", want: "1"}},
		}, network("A", 32*s), network("B", 32*s), network("C", 32*s), []crow{
			{"", step{at: 33 * s, do: "probe-any", want: "timeout"}},
			{"", step{at: 33 * s, do: "published", want: "A opened until 31s; ? lease; ? opened until 1m3s"}},
			{"A", step{at: 33 * s, do: "acquire", want: "open 30s"}},
			{"B", step{at: 33 * s, do: "acquire", want: "open 30s"}},
			{"C", step{at: 33 * s, do: "acquire", want: "open 30s"}},
		}),
		"a node that asked alone probes after claiming the lease": cat(network("A", 0), tripA(0), []crow{
			{"C", step{at: 10 * s, do: "acquire", want: "open 21s"}},
			{"C", step{at: 31 * s, do: "probes", want: "1"}},
			{"", step{at: 31 * s, do: "published", want: "A opened until 31s; C lease"}},
			{"A", step{at: 32 * s, do: "acquire", want: "open 0s"}},
			{"B", step{at: 32 * s, do: "acquire", want: "open 0s"}},
			{"C", step{at: 32 * s, do: "probe", want: "answer"}},
			{"A", step{at: 32 * s, do: "acquire", want: "ok"}},
		}),
		"a node without demand still waits for the lease before its trial": cat(network("A", 0), tripA(0), []crow{
			{"B", step{at: 10 * s, do: "acquire", want: "open 21s"}},
			{"B", step{at: 31 * s, do: "probes", want: "1"}},
			{"C", step{at: 32 * s, do: "acquire", want: "open 0s"}},
			{"C", step{at: 32 * s, do: "acquire", want: "open 0s"}},
			{"", step{at: 32 * s, do: "published", want: "A opened until 31s; B lease"}},
		}),
		// As on a node of its own, the first caller after a period
		// nobody asked in is the trial, once the lease is this node's.
		"without demand the first caller claims the lease and is the trial": cat(network("A", 0), tripA(0), []crow{
			{"C", step{at: 31 * s, do: "acquire", tk: "t", want: "trial"}},
			{"C", step{at: 31 * s, do: "acquire", want: "open 0s"}},
			{"A", step{at: 31 * s, do: "acquire", want: "open 0s"}},
			{"", step{at: 31 * s, do: "published", want: "A opened until 31s; C lease"}},
			{"", step{at: 31 * s, do: "probing", want: "0"}},
			{"C", step{at: 32 * s, do: "answer", tk: "t"}},
			{"", step{at: 32 * s, do: "published", want: "C answered"}},
			{"A", step{at: 32 * s, do: "acquire", want: "ok"}},
			{"B", step{at: 32 * s, do: "state", want: "closed"}},
		}),
		"a lease slower than the caller's wait leaves it refused and starts a probe": cat(network("A", 0), tripA(0), []crow{
			{"", step{at: 0, do: "slow-claims"}},
			{"C", step{at: 31 * s, do: "acquire", want: "open 0s"}},
			{"C", step{at: 31 * s, do: "probes", want: "0"}},
			{"C", step{at: 32 * s, do: "probes", want: "1"}},
			{"", step{at: 32 * s, do: "published", want: "A opened until 31s; C lease"}},
			{"C", step{at: 33 * s, do: "probe", want: "answer"}},
			{"A", step{at: 33 * s, do: "state", want: "closed"}},
		}),
		// The check runs on the node that tripped; its answer is
		// published like any other closing.
		"a check's answer closes every node": cat(network("A", 0), []crow{
			{"A", step{at: 0, do: "acquire", tk: "up"}},
			{"A", step{at: 0, do: "answer-after", tk: "up", want: "100ms"}},
			{"A", step{at: s, do: "acquire", tk: "a1"}}, {"A", step{at: 2 * s, do: "fail", tk: "a1", want: "timeout-after-1s"}},
			{"A", step{at: 2 * s, do: "acquire", tk: "a2"}}, {"A", step{at: 3 * s, do: "fail", tk: "a2", want: "timeout-after-1s"}},
			{"", step{at: 3 * s, do: "published", want: "A opened until 33s"}},
			{"B", step{at: 3 * s, do: "acquire", want: "open 30s"}},
			{"", step{at: 3 * s, do: "probing", want: "1"}},
			{"", step{at: 4 * s, do: "probe-any", want: "answer"}},
			{"", step{at: 4 * s, do: "published", want: "A answered"}},
			{"B", step{at: 4 * s, do: "acquire", want: "ok"}},
			{"C", step{at: 4 * s, do: "state", want: "closed"}},
		}),
		"a lease whose holder dies expires and another node probes": cat(network("A", 0), tripA(0), []crow{
			{"A", step{at: 10 * s, do: "acquire", want: "open 21s"}},
			{"A", step{at: 31 * s, do: "probes", want: "1"}},
			{"A", step{at: 32 * s, do: "close"}},
			{"B", step{at: 33 * s, do: "acquire", want: "open 0s"}},
			{"B", step{at: 36*s - 1, do: "probes", want: "0"}},
			{"B", step{at: 36*s - 1, do: "acquire", want: "open 0s"}},
			{"B", step{at: 36 * s, do: "probes", want: "1"}},
			{"", step{at: 36 * s, do: "published", want: "A opened until 31s; A lease; B lease"}},
			{"B", step{at: 37 * s, do: "probe", want: "answer"}},
			{"C", step{at: 37 * s, do: "state", want: "closed"}},
		}),
		"a reset on any node closes every node": cat(network("A", 0), tripA(0), []crow{
			{"C", step{at: 2 * s, do: "reset"}},
			{"", step{at: 2 * s, do: "published", want: "A opened until 31s; C reset"}},
			{"A", step{at: 2 * s, do: "acquire", want: "ok"}},
			{"B", step{at: 2 * s, do: "state", want: "closed"}},
		}),
		"reset-all on any node closes every node": cat(network("A", 0), tripA(0), []crow{
			{"B", step{at: 2 * s, do: "reset-all"}},
			{"", step{at: 2 * s, do: "published", want: "A opened until 31s; B reset-all"}},
			{"A", step{at: 2 * s, do: "state", want: "closed"}},
			{"C", step{at: 2 * s, do: "state", want: "closed"}},
		}),
		"requests in flight when a node adopts an opening are its siblings": cat(network("A", 0), []crow{
			{"B", step{at: 0, do: "acquire", tk: "s1"}},
		}, tripA(0), []crow{
			{"B", step{at: s, do: "state", want: "open"}},
			{"A", step{at: 10 * s, do: "acquire", want: "open 21s"}},
			{"A", step{at: 32 * s, do: "probe", want: "answer"}},
			{"B", step{at: 32 * s, do: "state", want: "closed"}},
			// B's request from before the opening times out after the
			// cluster's probe closed it: a sibling of the failures
			// behind the opening, it does not count, so one new failure
			// is a streak of one.
			{"B", step{at: 33 * s, do: "fail", tk: "s1", want: "timeout"}},
			{"B", step{at: 33 * s, do: "acquire", tk: "n1"}},
			{"B", step{at: 33 * s, do: "fail", tk: "n1", want: "timeout"}},
			{"B", step{at: 33 * s, do: "state", want: "closed"}},
		}),
		"the kill switch refuses nothing for a remote opening": cat(network("A", 0), tripA(0), []crow{
			{"B", step{at: 2 * s, do: "disable"}},
			{"B", step{at: 2 * s, do: "acquire", want: "ok"}},
			{"B", step{at: 2 * s, do: "enable"}},
			{"B", step{at: 2 * s, do: "acquire", want: "open 29s"}},
			{"B", step{at: 2 * s, do: "exempt", tk: "e", want: "ok"}},
		}),
		// With TrialWait (see waiting below): C saw the host answer in
		// 2s, before A's failures, so its callers may wait 10s.
		"a caller refused the lease waits for the holder's trial, whose answer admits it": cat(network("A", 0), seenUpOn("C"), tripA(2*s), []crow{
			{"A", step{at: 33 * s, do: "acquire", tk: "t", want: "trial"}},
			{"C", step{at: 33 * s, do: "acquire-bg", tk: "w"}},
			{"C", step{at: 33 * s, do: "got", tk: "w", want: "waiting"}},
			{"", step{at: 33 * s, do: "published", want: "A opened until 33s; A lease"}},
			{"A", step{at: 34 * s, do: "answer", tk: "t"}},
			{"C", step{at: 34 * s, do: "got", tk: "w", want: "ok"}},
			{"C", step{at: 34 * s, do: "waits", want: "1 0 0"}},
		}),
		"... and whose failure refuses it by the opening that follows": cat(network("A", 0), seenUpOn("C"), tripA(2*s), network("A", 33*s), []crow{
			{"A", step{at: 33 * s, do: "acquire", tk: "t", want: "trial"}},
			{"C", step{at: 33 * s, do: "acquire-bg", tk: "w"}},
			{"A", step{at: 34 * s, do: "fail", tk: "t", want: "timeout"}},
			{"C", step{at: 34 * s, do: "got", tk: "w", want: "open 30s"}},
		}),
		"a caller that finds the cluster's claim out waits through it for the probe": cat(network("A", 0), seenUpOn("C"), tripA(2*s), []crow{
			{"C", step{at: 10 * s, do: "acquire", want: "open 23s"}},
			{"", step{at: 0, do: "slow-claims"}},
			// C's timer claims the lease at the period's end (a second),
			// and C's caller waits through the claim for the probe.
			{"C", step{at: 33 * s, do: "acquire-bg", tk: "w"}},
			{"C", step{at: 34 * s, do: "probes", want: "1"}},
			{"C", step{at: 34 * s, do: "got", tk: "w", want: "waiting"}},
			{"C", step{at: 34 * s, do: "probe", want: "answer"}},
			{"C", step{at: 34 * s, do: "got", tk: "w", want: "ok"}},
		}),
		"a partitioned node's openings stay its own": cat(network("A", 0), []crow{
			{"", step{at: 0, do: "cut"}},
		}, tripA(0), []crow{
			{"A", step{at: 2 * s, do: "state", want: "open"}},
			{"B", step{at: 2 * s, do: "state", want: "closed"}},
		}),
	}
	for name, table := range tables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h := newHub(5 * time.Second)
				beds := map[string]*bed{}
				for _, n := range []string{"A", "B", "C"} {
					cfg := guard.Config{Share: node{h, n}}
					if waiting[name] {
						cfg.TrialWait = time.Minute
					}
					b := setupProbes(t, cfg, false)
					beds[n] = b
					h.mu.Lock()
					h.guards[n] = b.g
					h.mu.Unlock()
				}
				defer func() {
					for _, b := range beds {
						b.shutdown()
					}
				}()
				seen := 0
				for i, r := range table {
					switch r.do {
					case "published":
						if d := time.Until(bubbleStart.Add(r.at)); d > 0 {
							time.Sleep(d)
						}
						synctest.Wait()
						h.mu.Lock()
						got := slices.Clone(h.log[seen:])
						seen = len(h.log)
						h.mu.Unlock()
						want := strings.Split(r.want, "; ")
						for j := range got {
							if j < len(want) && strings.HasPrefix(want[j], "? ") && got[j][1:] == want[j][1:] {
								got[j] = want[j]
							}
						}
						if strings.Join(got, "; ") != r.want {
							t.Fatalf("row %d (%v): published %q, want %q", i, r.at, got, r.want)
						}
					case "probing", "probe-any":
						if d := time.Until(bubbleStart.Add(r.at)); d > 0 {
							time.Sleep(d)
						}
						synctest.Wait()
						var running []*bed
						for _, b := range beds {
							b.mu.Lock()
							for _, c := range b.probes {
								if !c.returned {
									running = append(running, b)
								}
							}
							b.mu.Unlock()
						}
						if r.do == "probing" {
							if got := fmt.Sprint(len(running)); got != r.want {
								t.Fatalf("row %d (%v): %s probes running, want %s", i, r.at, got, r.want)
							}
							continue
						}
						if len(running) != 1 {
							t.Fatalf("row %d (%v): %d probes running, want 1", i, r.at, len(running))
						}
						running[0].run([]step{{at: r.at, do: "probe", want: r.want}})
					case "cut":
						h.mu.Lock()
						h.cut["A"] = true
						h.mu.Unlock()
					case "slow-claims":
						h.mu.Lock()
						h.delay = time.Second
						h.mu.Unlock()
					default:
						beds[r.node].run([]step{r.step})
					}
				}
			})
		})
	}
}
