package server

import (
	"container/list"
	"sync"
	"time"

	"github.com/hostguard/hostguard/api"
)

// The store keeps a host's latest outcome times and totals, not the order
// of its recent outcomes, so the status page's per-host timeline comes
// from what this node answered since it started: a small ring per host,
// for a bounded number of hosts, the least recently touched forgotten
// first. Nodes sharing a store each see their own touches.
const (
	// outcomesPerHost is the length of a host's timeline.
	outcomesPerHost = 20
	// outcomeHosts bounds the hosts with a timeline: about 400 KiB at most.
	outcomeHosts = 1024
)

// outcome is one touch as the timeline shows it.
type outcome struct {
	at   time.Time
	kind outcomeKind
}

type outcomeKind uint8

const (
	outcomeSuccess outcomeKind = iota
	outcomeFailure
	// outcomeIgnored is a failure that outage protection did not count.
	outcomeIgnored
)

func (k outcomeKind) String() string {
	switch k {
	case outcomeSuccess:
		return "success"
	case outcomeFailure:
		return "failure"
	}
	return "ignored"
}

type hostRing struct {
	name string
	buf  [outcomesPerHost]outcome
	n    int // entries held, up to outcomesPerHost
	next int // where the next entry goes
}

// hostHistory holds the rings, in least-recently-touched order.
type hostHistory struct {
	mu     sync.Mutex
	max    int
	byName map[string]*list.Element
	order  *list.List // of *hostRing, most recent at the front
}

func newHostHistory(max int) *hostHistory {
	return &hostHistory{max: max, byName: make(map[string]*list.Element), order: list.New()}
}

// add records an outcome for the normalised name.
func (h *hostHistory) add(name string, kind outcomeKind, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.byName[name]
	if ok {
		h.order.MoveToFront(el)
	} else {
		if h.order.Len() >= h.max {
			oldest := h.order.Back()
			h.order.Remove(oldest)
			delete(h.byName, oldest.Value.(*hostRing).name)
		}
		el = h.order.PushFront(&hostRing{name: name})
		h.byName[name] = el
	}
	r := el.Value.(*hostRing)
	r.buf[r.next] = outcome{at: at.UTC(), kind: kind}
	r.next = (r.next + 1) % outcomesPerHost
	r.n = min(r.n+1, outcomesPerHost)
}

// recent returns the name's outcomes, oldest first; nil when none.
func (h *hostHistory) recent(name string) []api.HostOutcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.byName[name]
	if !ok {
		return nil
	}
	r := el.Value.(*hostRing)
	out := make([]api.HostOutcome, 0, r.n)
	for i := range r.n {
		o := r.buf[(r.next-r.n+i+outcomesPerHost)%outcomesPerHost]
		out = append(out, api.HostOutcome{At: o.at, Outcome: o.kind.String()})
	}
	return out
}
