package server

import (
	"container/list"
	"sync"
	"time"

	"github.com/hostguard/hostguard/guard"
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

// outcomeView is one entry of a host's recent outcomes in the report.
type outcomeView struct {
	At      time.Time `json:"at"`
	Outcome string    `json:"outcome"`
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
func (h *hostHistory) recent(name string) []outcomeView {
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.byName[name]
	if !ok {
		return nil
	}
	r := el.Value.(*hostRing)
	out := make([]outcomeView, 0, r.n)
	for i := range r.n {
		o := r.buf[(r.next-r.n+i+outcomesPerHost)%outcomesPerHost]
		out = append(out, outcomeView{At: o.at, Outcome: o.kind.String()})
	}
	return out
}

// endpointSince remembers when each endpoint that is not closed entered
// its state, which the guard does not record. It learns it from the
// guard's transitions, so an endpoint that was open before this node saw
// it open has no time. Entries of closed endpoints are dropped; the rest
// are bounded like the guard's own records.
type endpointSince struct {
	mu    sync.Mutex
	max   int
	since map[string]stateSince
}

type stateSince struct {
	state guard.State
	at    time.Time
}

func newEndpointSince(max int) *endpointSince {
	return &endpointSince{max: max, since: make(map[string]stateSince)}
}

func (e *endpointSince) note(endpoint string, to guard.State, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if to == guard.Closed {
		delete(e.since, endpoint)
		return
	}
	if _, ok := e.since[endpoint]; !ok && len(e.since) >= e.max {
		// A guard that evicted open records can leave entries behind;
		// dropping an arbitrary one costs only its time on the page.
		for k := range e.since {
			delete(e.since, k)
			break
		}
	}
	e.since[endpoint] = stateSince{state: to, at: at.UTC()}
}

// get returns when endpoint entered state, if this node saw it happen.
func (e *endpointSince) get(endpoint string, state guard.State) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.since[endpoint]
	if !ok || s.state != state {
		return time.Time{}, false
	}
	return s.at, true
}

// keepOnly drops the entries of endpoints not in live (the guard forgot
// them).
func (e *endpointSince) keepOnly(live map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.since {
		if !live[k] {
			delete(e.since, k)
		}
	}
}
