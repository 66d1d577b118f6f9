package guard

import (
	"sync"
	"time"

	"github.com/hostguard/hostguard/failure"
)

// admission identifies one admitted ticket. rec is the guard-wide serial of
// the record that admitted it, taken from one atomic counter when the
// record is created and never reused; seq counts admissions within that
// record under its lock. Ordered as a pair, admissions are unique across
// the guard's lifetime and increase with every admission to an endpoint,
// also within one clock instant and across eviction, which is all the
// sibling rule compares; and admitting a ticket touches no state shared
// with other endpoints.
type admission struct {
	rec, seq uint64
}

func (a admission) after(b admission) bool {
	return a.rec > b.rec || a.rec == b.rec && a.seq > b.seq
}

// endpoint is the record of one endpoint. Everything below mu is guarded by
// it.
type endpoint struct {
	key    string
	serial uint64

	mu        sync.Mutex
	open      bool          // tripped: Open until openUntil, HalfOpen from then on
	openUntil time.Time     // end of the open period
	trial     uint64        // seq of the ticket holding the half-open slot; 0 when free
	epoch     uint64        // bumped by Reset
	seq       uint64        // last admission seq handed out
	boundary  admission     // last admission at the time of the last counted failure
	streak    []time.Time   // times of the counted failures that may still trip, while closed
	fails     int           // counted failures since the record last cleared
	last      failure.Class // class of the last counted failure
	lastAt    time.Time
	openings  int           // openings in a row without an answer or Reset in between
	out       int       // tickets admitted and not yet settled
	touched   bool      // used since the last sweep
	seen      time.Time // when the record was created or last seen in use by a sweep
	shown     State     // state last reported to OnTransition
	evicted   bool

	// Probes; see probe.go.
	demand bool        // a non-exempt Acquire was refused during the current open period
	timer  *time.Timer // starts a probe when the open period ends; armed on the first refusal
	probe  *probeRun   // the probe holding the trial slot, if one does
	cycle  uint64      // bumped whenever the record trips or clears, so a late timer knows it is stale
}

// state returns the state at now. Call with mu held.
func (ep *endpoint) state(now time.Time) State {
	switch {
	case !ep.open:
		return Closed
	case now.Before(ep.openUntil):
		return Open
	}
	return HalfOpen
}

// observe queues the one transition that happens by the passing of time,
// open to half-open, if now is the first look past the open period. It
// never goes back: a caller whose clock reading is older than another's
// must not report half-open to open. Call with mu held.
func (ep *endpoint) observe(now time.Time, tr *transitions) {
	if ep.shown == Open && ep.state(now) == HalfOpen {
		tr.add(ep, HalfOpen)
	}
}

// trip opens the record from now for the period its opening count
// earns (see Guard.openFor). Call with mu held.
func (g *Guard) trip(ep *endpoint, now time.Time) {
	ep.openings++
	ep.open = true
	ep.openUntil = now.Add(g.openFor(ep.key, ep.openings))
	ep.streak = ep.streak[:0]
	ep.trial = 0
	ep.endCycle()
}

// clear forgets the failure evidence: the host answered or was reset. The
// boundary stays, so siblings of an old failure still count as one. Call
// with mu held.
func (ep *endpoint) clear() {
	ep.open = false
	ep.openUntil = time.Time{}
	ep.streak = ep.streak[:0]
	ep.fails = 0
	ep.trial = 0
	ep.openings = 0
	ep.endCycle()
}

// endCycle forgets the demand seen in an open period, stops its timer and
// cancels its probe: the record has just tripped or cleared, so none of
// them is wanted any more. A probe cancelled here still holds its ticket
// until it returns; its report is judged like any other. Call with mu
// held.
func (ep *endpoint) endCycle() {
	ep.cycle++
	ep.demand = false
	if ep.timer != nil {
		ep.timer.Stop()
		ep.timer = nil
	}
	if ep.probe != nil {
		ep.probe.cancel()
		ep.probe = nil
	}
}

// rank orders eviction candidates: a closed record with no evidence holds
// nothing worth keeping, a closed one with a streak holds a little, an open
// or half-open one holds a verdict. Call with mu held.
func (ep *endpoint) rank() int {
	switch {
	case ep.open:
		return 2
	case ep.fails > 0:
		return 1
	}
	return 0
}

// transition is one state change waiting to be reported.
type transition struct {
	from, to State
}

// transitions collects the state changes of one locked operation so they
// can be reported after the lock is released. No operation makes more than
// two (open to half-open, then on).
type transitions struct {
	n    int
	list [2]transition
}

// add queues the change from ep.shown to to, if any, and records to as
// shown. Call with ep.mu held.
func (tr *transitions) add(ep *endpoint, to State) {
	if ep.shown == to {
		return
	}
	if tr.n < len(tr.list) {
		tr.list[tr.n] = transition{ep.shown, to}
		tr.n++
	}
	ep.shown = to
}

// countInStreak adds a counted failure at now to the streak, first dropping
// failures more than window before now, so the streak holds only failures
// that lie within one inclusive window. Call with mu held.
func (ep *endpoint) countInStreak(now time.Time, window time.Duration) {
	kept := ep.streak[:0]
	for _, at := range ep.streak {
		if now.Sub(at) <= window {
			kept = append(kept, at)
		}
	}
	ep.streak = append(kept, now)
	ep.fails = len(ep.streak)
}
