package guard

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/failure"
)

// Flags of an endpoint record, read without its lock so that the closed
// path and most fast-fails take none. They are set and cleared with the
// lock held.
const (
	fOpen     = 1 << iota // tripped: Acquire must look at the time
	fEvidence             // open, or closed with a streak: an answer must take the lock to clear
	fDemand               // an Acquire was refused during the current open period
	fTrial                // the half-open trial slot is taken: refuse with RetryAfter 0
	fAsked                // an Acquire was refused while the trial was out: demand for the next open period
	fEvicted              // being evicted or gone: look the key up again
	fCheck                // the trial slot holds a check of the opening (startCheck): refuse by the open period
)

// endpoint is the record of one endpoint.
//
// Admissions are numbered by seq, an atomic counter of the record: every
// ticket gets the next number, so within a record tickets are ordered by
// admission even within one clock instant, which is all the sibling rule,
// Reset and trial ownership compare. A ticket points to its record, never
// to a slot or a key, so the record is its generation: when a record
// pinned only by stale tickets is reclaimed (see makeRoom), or one is
// created again for the same key, the new record starts with no evidence
// and the old tickets report into the old one, which is gone and reports
// nothing.
type endpoint struct {
	g   *Guard
	key string

	// Read and written without the lock.
	seq atomic.Uint64 // last admission number handed out
	out atomic.Int64  // tickets admitted and not yet settled
	// The highest admission number answered; see Ticket.sentBeforeAnAnswer.
	// Beside out, which every answer writes already, so that it costs the
	// closed path no other cache line.
	answered atomic.Uint64
	flags    atomic.Uint32             // fOpen, fEvidence, fDemand, fEvicted
	used     atomic.Bool               // used since the last sweep or pass of the eviction hand
	seen     atomic.Int64              // when the record was created or last seen in use, as Guard.since
	openNs   atomic.Int64              // end of the open period, as Guard.since; meaningful while fOpen
	openErr  atomic.Pointer[OpenError] // the last fast-fail error handed out, shared by callers
	need     atomic.Int64              // what the endpoint recently needed to answer, in ns; see latency.go
	doubt    atomic.Int64              // since+1 of the first give-up its need excused since its last answer; 0: none
	// One past the coarse clock's reading at the last answer, as
	// Guard.since (a lower bound of its time); 0 for none. Kept only by a
	// sharing guard.
	answeredAt atomic.Int64

	mu        sync.Mutex    // guards the fields below
	open      bool          // tripped: Open until openUntil, HalfOpen from then on
	openUntil time.Time     // end of the open period
	openedAt  time.Time     // start of the open period
	trial     uint64        // seq of the ticket holding the half-open slot; 0 when free
	epoch     uint64        // how many times Reset was called
	resetSeq  uint64        // last admission before the last Reset or ResetAll: its reports count for nothing
	boundary  uint64        // last admission at the time of the last counted failure
	streak    []strike      // the counted failures that may still trip, while closed
	fails     int           // counted failures since the record last cleared
	last      failure.Class // class of the last counted failure
	lastAt    time.Time
	openings  int   // openings in a row without an answer or Reset in between
	shown     State // state last reported to OnTransition
	evicted   bool
	slot      int // index in Guard.ring; guarded by Guard.ringMu

	// Guarded by Guard.ringMu: the admission count the eviction hand or
	// a sweep last saw, and since when it has not moved. Every ticket
	// out was admitted at or before quietSince while seq equals quietSeq.
	quietSeq   uint64
	quietSince int64

	// Probes; see probe.go.
	demand bool        // a non-exempt Acquire was refused during the current open period
	timer  *time.Timer // starts a probe when the open period ends; armed on the first refusal
	probe  *probeRun   // the probe holding the trial slot, if one does
	cycle  uint64      // bumped whenever the record trips or clears, so a late timer knows it is stale

	// Sharing; see share.go.
	claimed uint64     // the cycle whose lease this guard has asked for
	waiter  *claimWait // the caller waiting for that lease to be its trial, if one is

	// Closed when the trial slot is next freed, for the callers waiting
	// on the trial's outcome (Config.TrialWait); nil while none waits.
	settled chan struct{}
}

// setTrial gives the trial slot to the ticket numbered seq, or frees it
// when seq is 0. Call with mu held.
func (ep *endpoint) setTrial(seq uint64) {
	ep.trial = seq
	if seq != 0 {
		ep.flags.Or(fTrial)
		return
	}
	ep.flags.And(^uint32(fTrial | fCheck))
	if ep.settled != nil {
		close(ep.settled)
		ep.settled = nil
	}
}

// trialSettled returns a channel closed when the trial slot is next
// freed: the trial answered (the record cleared), failed (it opened
// again), or ended inconclusive. Call with mu held and the slot taken.
func (ep *endpoint) trialSettled() <-chan struct{} {
	if ep.settled == nil {
		ep.settled = make(chan struct{})
	}
	return ep.settled
}

// markUsed notes a use for the idle sweep and the eviction hand. It writes
// only when the mark is not set yet, so that callers sharing a record do
// not keep writing to its cache line.
func (ep *endpoint) markUsed() {
	if !ep.used.Load() {
		ep.used.Store(true)
	}
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

// trip opens the record from now for the period its opening count earns
// (see Guard.openFor). Call with mu held.
func (g *Guard) trip(ep *endpoint, now time.Time) {
	ep.openings++
	g.openPeriod(ep, now, now, now.Add(g.openFor(ep.key, ep.openings)))
}

// openPeriod opens the record from at until until, as seen at now. Call
// with mu held.
func (g *Guard) openPeriod(ep *endpoint, now, at, until time.Time) {
	ep.open = true
	ep.openedAt = at
	ep.openUntil = until
	ep.streak = ep.streak[:0]
	ep.setTrial(0)
	asked := ep.flags.Load()&fAsked != 0
	ep.endCycle()
	// openNs before the flag: a lock-free reader that sees fOpen reads
	// this period's end or a later one.
	ep.openNs.Store(g.since(ep.openUntil))
	ep.flags.Or(fOpen | fEvidence)
	if asked {
		// Callers were refused while the failed trial ran: they asked
		// for the endpoint, so the period that follows has demand.
		g.noteDemand(ep, now)
	}
}

// clear forgets the failure evidence: the host answered or was reset. The
// boundary stays, so siblings of an old failure still count as one. Call
// with mu held.
func (ep *endpoint) clear() {
	ep.flags.And(^uint32(fOpen | fEvidence))
	ep.open = false
	ep.openedAt, ep.openUntil = time.Time{}, time.Time{}
	ep.streak = ep.streak[:0]
	ep.fails = 0
	ep.setTrial(0)
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
	ep.flags.And(^uint32(fDemand | fAsked))
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
// or half-open one holds a verdict. It reads the flags, so the eviction
// hand can rank a record without its lock.
func (ep *endpoint) rank() int {
	f := ep.flags.Load()
	switch {
	case f&fOpen != 0:
		return 2
	case f&fEvidence != 0:
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
	pub  Transition // the change to pass to the Sharer; Change is 0 for none
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

// strike is one counted failure of a streak: when it was reported, which
// the window judges, and when its request was sent, which dates its
// evidence for other guards (Transition.Since).
type strike struct {
	at, sent time.Time
}

// countInStreak adds a counted failure at now, of a request sent at sent,
// to the streak, first dropping failures more than window before now, so
// the streak holds only failures that lie within one inclusive window.
// Call with mu held.
func (ep *endpoint) countInStreak(now, sent time.Time, window time.Duration) {
	kept := ep.streak[:0]
	for _, s := range ep.streak {
		if now.Sub(s.at) <= window {
			kept = append(kept, s)
		}
	}
	ep.streak = append(kept, strike{at: now, sent: sent})
	ep.fails = len(ep.streak)
	ep.flags.Or(fEvidence)
}
