package guard

import (
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/failure"
)

// DefaultWaitFloor is the wait a caller's give-up must exceed to say
// anything about an endpoint: a second is longer than almost every answer
// from a working host, and shorter than the timeouts real clients use.
const DefaultWaitFloor = time.Second

// WaitFactor is k in the wait rule: a give-up counts only once the
// endpoint has owed its answer for more than k times what it recently
// needed to answer. Four leaves room for a host that is having a slow
// moment, so that only a host far slower than its own habit is charged.
const WaitFactor = 4

// WaitError reports a request that ended without an answer because its
// caller stopped waiting: a deadline or timeout the caller chose (a
// client's timeout, http.Client.Timeout, a Hostguard-Timeout hint), or a
// caller that went away. Owed is how long the endpoint had owed its answer
// when that happened: connecting and waiting for headers, never the time
// the caller spent sending its request body.
//
// Ticket.Failed judges a *WaitError anywhere in the chain by the wait
// rule (Config.WaitFloor) instead of by its class: it counts as a timeout
// when Owed is longer than the floor and longer than WaitFactor times what
// the endpoint recently needed to answer (see Ticket.AnsweredAfter), and is
// inconclusive otherwise, however short a wait the caller asked for.
// Classify sees a timeout, or Err's class when Err is set.
type WaitError struct {
	Owed time.Duration
	// Err is what ended the request (a deadline, a cancellation); nil
	// for a caller that simply went away.
	Err error
}

func (e *WaitError) Error() string {
	msg := fmt.Sprintf("guard: the caller stopped waiting after the endpoint owed its answer for %v", e.Owed.Round(time.Millisecond))
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Timeout reports true: a caller that stopped waiting timed out, in the
// sense of net.Error.
func (e *WaitError) Timeout() bool { return true }

func (e *WaitError) Unwrap() error { return e.Err }

// OwedFor returns Owed: the failure's evidence dates from that long before
// it was reported (see Ticket.Failed).
func (e *WaitError) OwedFor() time.Duration { return e.Owed }

// owedFor returns how long the endpoint had owed its answer when the
// request that failed with err ended, as the first error in the chain with
// an OwedFor method says; 0 when none does.
func owedFor(err error) time.Duration {
	var o interface{ OwedFor() time.Duration }
	if errors.As(err, &o) {
		return max(o.OwedFor(), 0)
	}
	return 0
}

// AnsweredAfter is Answered for a caller that measured how long the
// endpoint took to answer: connecting and waiting for headers, without
// the time spent sending the request body. The guard keeps a cheap
// running figure of it per endpoint (it rises at once to a slower answer
// and eases down over about eight faster ones), against which the wait
// rule judges give-ups. It takes no lock and allocates nothing.
func (t *Ticket) AnsweredAfter(need time.Duration) {
	if t != nil && t.kind&kDoor != 0 {
		if t.settle() {
			t.doorAnswered(need)
		}
		return
	}
	if t != nil && t.ep.g != nil && !t.done.Load() {
		t.ep.noteNeed(need)
	}
	t.Answered()
}

// noteNeed folds one answer's time into the endpoint's figure.
func (ep *endpoint) noteNeed(d time.Duration) {
	if d <= 0 {
		return
	}
	for {
		old := ep.need.Load()
		n := int64(d)
		if n < old {
			n = old - (old-n)/8
		}
		if n == old || ep.need.CompareAndSwap(old, n) {
			return
		}
	}
}

// answeredNow forgets doubts about an endpoint's figure: it answered, so
// what it needs is current. It writes only when there is something to
// forget, so that answers on the closed path stay reads.
func (ep *endpoint) answeredNow() {
	if ep.doubt.Load() != 0 {
		ep.doubt.Store(0)
	}
}

// classify is failure.Classify with the wait rule: a *WaitError is a
// timeout when its wait counts and inconclusive otherwise, judged with
// now (read lazily: most failures need no clock here). With the rule off
// the error is what its Err says. Call with ep.mu held.
func (g *Guard) classify(ep *endpoint, err error, now func() time.Time) failure.Class {
	var w *WaitError
	if !errors.As(err, &w) {
		return failure.Classify(err)
	}
	if g.cfg.WaitFloor < 0 {
		// Off: a give-up is inconclusive, a timeout counts as it says.
		return failure.Classify(w.Err)
	}
	if g.waitCounts(ep, w.Owed, now) {
		return failure.Timeout
	}
	return failure.Canceled
}

// waitCounts is the wait rule. A wait at or under the floor never counts.
// Above it, it counts unless the endpoint has recently needed more than a
// WaitFactor-th of it to answer. That figure can go stale: a slow host
// that dies is seen answering by nobody again, so once callers have kept
// giving up on it for a whole Window without a single answer, the floor
// alone judges it. Call with ep.mu held.
func (g *Guard) waitCounts(ep *endpoint, owed time.Duration, now func() time.Time) bool {
	if owed <= g.cfg.WaitFloor {
		return false
	}
	need := ep.need.Load()
	if need == 0 || int64(owed) > WaitFactor*need {
		return true
	}
	// 0 is "no doubt yet", so instants are stored one past since.
	at := g.since(now()) + 1
	first := ep.doubt.Load()
	if first == 0 {
		ep.doubt.Store(at)
		return false
	}
	if at-first <= int64(g.cfg.Window) {
		return false
	}
	ep.need.CompareAndSwap(need, 0)
	return true
}
