package guard

import (
	"sync/atomic"

	"github.com/hostguard/hostguard/failure"
)

// Kinds of ticket.
const (
	kTrial  = 1 << iota // holds the half-open trial slot
	kExempt             // never refused; failures never count
	kDoor               // let in by the door, on no record; see door.go
	kLate               // reports for a kDoor ticket: a sibling of any failure already counted
)

// Ticket is permission to contact one endpoint once. Settle it with
// exactly one of Answered or Failed, and call Release in a defer: Release
// is the cleanup for every path that reported nothing (a panic, an early
// return) and a no-op after a report, so calling it always is correct.
// Every method is safe to call more than once, concurrently, and on a nil
// *Ticket; only the first settling call counts.
//
// A Ticket is 32 bytes, the one allocation of the hot path: the key lives
// in the record. A ticket no record holds (the guard disabled, no room,
// or let in by the door at the cap) keeps its key beside it, in the same
// allocation, and points to a stub shared by all such tickets.
type Ticket struct {
	ep   *endpoint // the record; for a loose ticket, nowhere or the guard's doorStub
	key  *string   // a loose ticket's endpoint key; nil for one a record holds
	seq  uint64    // admission number within ep; for a door ticket, Guard.resets at admission
	kind uint8
	done atomic.Bool
}

// looseTicket is a ticket no record holds, and its key.
type looseTicket struct {
	t   Ticket
	key string
}

// nowhere is the stub of tickets that report nothing anywhere: its g is
// nil, so settle refuses every report.
var nowhere = new(endpoint)

func loose(stub *endpoint, key string, seq uint64, kind uint8) *Ticket {
	l := &looseTicket{key: key}
	l.t = Ticket{ep: stub, key: &l.key, seq: seq, kind: kind}
	return &l.t
}

// untracked returns a ticket for key that reports nothing anywhere.
func untracked(key string) *Ticket {
	return loose(nowhere, key, 0, 0)
}

// Endpoint returns the endpoint key the ticket was issued for.
func (t *Ticket) Endpoint() string {
	switch {
	case t == nil:
		return ""
	case t.key != nil:
		return *t.key
	}
	return t.ep.key
}

// Trial reports whether the ticket holds the endpoint's half-open trial
// slot: the one request whose outcome decides whether the endpoint closes
// or opens again.
func (t *Ticket) Trial() bool {
	return t != nil && t.kind&kTrial != 0
}

// Answered reports that the host sent an HTTP response, of any status: it
// is reachable, so the endpoint's record is cleared. An answer is recorded
// even while the guard is disabled and even from a ticket issued before a
// Reset, because it can only make the guard contact the host sooner.
//
// On a closed endpoint without a streak it takes no lock.
func (t *Ticket) Answered() {
	if !t.settle() {
		return
	}
	if t.kind&kDoor != 0 {
		t.doorAnswered(0)
		return
	}
	ep := t.ep
	ep.out.Add(-1)
	ep.answeredNow()
	// The highest admission answered, for sentBeforeAnAnswer. A racing
	// answer may store a lower number over a higher one; that only
	// lets a stale failure count, as it did before the rule.
	if ep.answered.Load() < t.seq {
		ep.answered.Store(t.seq)
	}
	if ep.g.cfg.Share != nil {
		ep.g.noteAnswer(ep)
	}
	if ep.flags.Load()&fEvidence == 0 {
		// The hot path: nothing to clear. A failure counted after this
		// load is news the answer came before.
		return
	}
	ep.mu.Lock()
	if ep.evicted {
		// Reclaimed while this ticket was out: the endpoint's evidence,
		// if any, is in a newer record this ticket knows nothing of.
		ep.mu.Unlock()
		return
	}
	var tr transitions
	now := ep.g.cfg.Now()
	ep.observe(now, &tr)
	if ep.open {
		tr.pub = Transition{Endpoint: ep.key, Change: ChangeAnswered, At: now}
	}
	ep.clear()
	tr.add(ep, Closed)
	ep.mu.Unlock()
	ep.g.report(ep, &tr)
}

// Failed reports that the request ended without any HTTP response. The
// error is classified with failure.Classify, except that a *WaitError is
// judged by the wait rule (see WaitError and Config.WaitFloor). A
// host-level failure counts against the endpoint unless it is discarded:
// the ticket is exempt, the guard is disabled, a Reset happened after the
// ticket was issued, or the ticket is a sibling of an already counted
// failure (admitted before it). A failed trial opens the endpoint again
// at once. Anything else (cancellation, policy refusal, reset by peer,
// TLS, unknown, a wait too short to judge) is inconclusive and only
// releases the trial slot if the ticket holds it.
//
// A timeout is news about the moment its request was sent, a whole wait
// before it is reported. An error that says how long the endpoint owed
// its answer (a *WaitError, or any error in the chain with an OwedFor
// method, such as the transport's header timeout) dates the failure from
// then: such a failure counts for nothing when a request admitted after
// it was answered, or, in a guard that keeps answer times (one with a
// Sharer), when the host answered after it was sent; and an opening tells
// other guards when the request behind its first failure was sent
// (Transition.Since). Other errors are dated when reported.
func (t *Ticket) Failed(err error) {
	if !t.settle() {
		return
	}
	if t.kind&kDoor != 0 {
		t.doorFailed(err)
		return
	}
	ep := t.ep
	g := ep.g
	// Read the kill switch before locking: it is caller code.
	disabled := g.disabled()
	ep.mu.Lock()
	ep.out.Add(-1)
	if ep.evicted {
		// Reclaimed while this ticket was out (stale tickets only, never
		// a trial): the failure reports into nothing.
		ep.mu.Unlock()
		return
	}
	owner := t.ownsTrial()
	if owner {
		ep.setTrial(0)
	}
	// While the record is open the boundary check alone admits only its
	// trial: the tripping failure moved the boundary past every ticket
	// admitted before it, and an open record admits nothing else that
	// counts. That is why a late sibling can never start a new open period.
	counted := !disabled && t.kind&kExempt == 0 &&
		t.seq > ep.resetSeq && t.seq > ep.boundary &&
		(t.kind&kLate == 0 || ep.flags.Load()&fEvidence == 0)
	// Classified only when it could count, so that the wait rule's
	// doubts come from evidence alone.
	var class failure.Class
	if counted {
		class = g.classify(ep, err, g.cfg.Now)
		counted = class.HostLevel()
	}
	if !counted {
		ep.mu.Unlock()
		return
	}
	now := g.cfg.Now()
	owed := owedFor(err)
	sent := now.Add(-owed)
	if g.answeredSince(ep, sent) || owed > 0 && t.sentBeforeAnAnswer() {
		// The host answered after this request was sent: its failure
		// is older news than that answer (the epoch rule, by time).
		ep.mu.Unlock()
		return
	}
	var tr transitions
	ep.observe(now, &tr)
	ep.boundary = ep.seq.Load()
	ep.last, ep.lastAt = class, now
	since, tripped := sent, owner
	if owner {
		ep.fails++
		g.trip(ep, now)
	} else {
		ep.countInStreak(now, sent, g.cfg.Window)
		if len(ep.streak) >= g.cfg.Threshold {
			since, tripped = ep.streak[0].sent, true
			g.trip(ep, now)
		}
	}
	if tripped && g.cfg.Share != nil {
		g.noteTime(now)
		tr.pub = Transition{Endpoint: ep.key, Change: ChangeOpened, At: now, Until: ep.openUntil, Since: since}
	}
	var check *probeRun
	if tripped && !owner && owed > 0 {
		check = g.startCheck(ep)
	}
	tr.add(ep, ep.state(now))
	ep.mu.Unlock()
	g.report(ep, &tr)
	if check != nil {
		go g.runProbe(check)
	}
}

// sentBeforeAnAnswer reports whether a request admitted after this
// ticket's was answered: for a failure dated from its send (a timeout),
// the host has answered since, so the failure is older news than the
// answer. Admission order stands for send order, which needs no clock: a
// guard that keeps no answer times (without a Sharer) applies the rule
// too, to the timeouts of requests that were hanging on a host when it
// came back. A kLate ticket's request went out before its record knew
// of it, so any answer the record has seen came after. Call with t.ep.mu
// held.
func (t *Ticket) sentBeforeAnAnswer() bool {
	a := t.ep.answered.Load()
	return a > t.seq || a > 0 && t.kind&kLate != 0
}

// Release gives the ticket back without a report, freeing the trial slot
// if this ticket holds it. It records nothing. After Answered or Failed,
// or a second time, it does nothing, and it can never free a slot that a
// newer trial holds. It works while the guard is disabled, so switching
// the guard back on cannot find a finished trial still holding its slot.
func (t *Ticket) Release() {
	if !t.settle() || t.key != nil {
		return
	}
	ep := t.ep
	ep.out.Add(-1)
	if t.kind&kTrial == 0 {
		return
	}
	ep.mu.Lock()
	if t.ownsTrial() {
		ep.setTrial(0)
	}
	ep.mu.Unlock()
}

// settle marks the ticket used and reports whether this call is the one
// that must update its record.
func (t *Ticket) settle() bool {
	// The load first: Release after a report, the common case, then
	// costs no locked instruction.
	return t != nil && t.ep.g != nil && !t.done.Load() && t.done.CompareAndSwap(false, true)
}

// ownsTrial reports whether the record's trial slot is this ticket's. The
// slot is named by the admission number, unique within the record, so a
// ticket can only ever free its own slot. Call with t.ep.mu held.
func (t *Ticket) ownsTrial() bool {
	return t.kind&kTrial != 0 && t.ep.trial == t.seq
}
