package guard

import (
	"context"
	"time"
)

// Change is the kind of state change a Transition carries.
type Change uint8

const (
	// ChangeOpened: the endpoint tripped and fails fast until Until.
	ChangeOpened Change = iota + 1
	// ChangeAnswered: an open or half-open endpoint closed because the
	// host answered (a request's answer or a probe's).
	ChangeAnswered
	// ChangeReset: Reset closed the endpoint on a user's word.
	ChangeReset
	// ChangeResetAll: ResetAll closed every endpoint; Endpoint is empty.
	ChangeResetAll
)

// String returns "opened", "answered", "reset" or "reset-all".
func (c Change) String() string {
	switch c {
	case ChangeOpened:
		return "opened"
	case ChangeAnswered:
		return "answered"
	case ChangeReset:
		return "reset"
	case ChangeResetAll:
		return "reset-all"
	}
	return "unknown"
}

// Transition is one state change of an endpoint, as guards share it.
type Transition struct {
	Endpoint string // the key; empty for ChangeResetAll
	Change   Change
	At       time.Time // when it happened, by the clock of the guard it happened in
	// ChangeOpened only: the end of the open period, and when the
	// request behind the first counted failure of the opening was sent
	// (its failure's time less what the endpoint owed, for a timeout; see
	// Ticket.Failed).
	Until time.Time
	Since time.Time
}

// ClaimParams asks for the cluster's one trial of an endpoint whose open
// period ended at Until.
type ClaimParams struct {
	Endpoint string
	Until    time.Time
}

// Lease is the answer to a claim: Held when this guard runs the trial,
// otherwise another guard holds it until Expires.
type Lease struct {
	Held    bool
	Expires time.Time
}

// Sharer carries an endpoint's transitions between guards, such as the
// guards of several processes on one database (store/postgres implements
// it). The guard calls it only on state changes, never per request: the
// closed path does not touch it. A Sharer that also implements Claimer
// gives the cluster one trial per open period.
//
// A Sharer alone can serve to observe a guard's transitions, for example
// to wake work parked behind a host when its endpoint closes on an answer
// (ChangeAnswered).
type Sharer interface {
	// Publish passes on a transition of this guard's own. The guard
	// calls it after the change, on the goroutine that made it, with no
	// lock held; it must not block on I/O (queue the write) and must not
	// call back into the guard. Openings are published only while the
	// guard's own network evidently works (see Config.Share).
	Publish(Transition)
}

// Claimer is implemented by a Sharer that keeps one lease per endpoint for
// the cluster, so that one guard runs the trial when an open period ends.
type Claimer interface {
	// Claim asks for the right to run the trial (or probe) of an
	// endpoint whose open period has ended. The guard calls it from a
	// goroutine of its own, at most once per open period and again when
	// the lease another guard held expires. An error lets this guard
	// run the trial, erring towards contacting the host.
	Claim(ctx context.Context, p ClaimParams) (Lease, error)
}

// shareAnswerWindow is how recent an answer from some other endpoint must
// be for the guard to trust its own failures enough to publish an
// opening: a node whose own requests all fail keeps its openings local.
const shareAnswerWindow = 30 * time.Second

// coarseStep is how often a sharing guard notes the time for the answers
// it records without reading the clock (see Guard.coarse).
const coarseStep = 250 * time.Millisecond

// leaseWait is the trial slot's holder while this guard waits for the
// cluster's lease: every Acquire fails fast with RetryAfter 0, as for a
// trial in flight. No ticket has this number.
const leaseWait = ^uint64(0)

// startCoarse starts the timer that keeps Guard.coarse within coarseStep of
// the clock. Only a guard with a Sharer runs it; Close stops it.
func (g *Guard) startCoarse() {
	g.noteTime(g.cfg.Now())
	g.lifeMu.Lock()
	defer g.lifeMu.Unlock()
	if g.closed.Load() {
		return
	}
	g.coarseTimer = time.AfterFunc(coarseStep, func() {
		g.noteTime(g.cfg.Now())
		g.lifeMu.Lock()
		defer g.lifeMu.Unlock()
		if !g.closed.Load() {
			g.coarseTimer.Reset(coarseStep)
		}
	})
}

// noteTime moves the coarse clock forward to now; it never moves back.
func (g *Guard) noteTime(now time.Time) {
	ns := g.since(now)
	for {
		c := g.coarse.Load()
		if ns <= c || g.coarse.CompareAndSwap(c, ns) {
			return
		}
	}
}

// noteAnswer records an answer on ep at the coarse clock's reading, a lower
// bound of its time. It writes only when the reading moved, so callers
// sharing a record do not keep writing to its cache line.
func (g *Guard) noteAnswer(ep *endpoint) {
	if c := g.coarse.Load() + 1; ep.answeredAt.Load() < c {
		ep.answeredAt.Store(c)
	}
}

// answeredSince reports whether ep is known to have answered after sent:
// its last answer's coarse reading, a lower bound of the answer's time, is
// later. Only a sharing guard keeps answer times; without one nothing is
// known and it reports false. Call with ep.mu held.
func (g *Guard) answeredSince(ep *endpoint, sent time.Time) bool {
	a := ep.answeredAt.Load()
	return a != 0 && a-1 > g.since(sent)
}

// networkWorks reports whether some endpoint other than self answered
// within shareAnswerWindow of now. It walks the records; only a trip of a
// sharing guard asks.
func (g *Guard) networkWorks(self *endpoint, now time.Time) bool {
	from := g.since(now.Add(-shareAnswerWindow))
	g.ringMu.Lock()
	defer g.ringMu.Unlock()
	for _, ep := range g.ring {
		if ep == nil {
			continue
		}
		if a := ep.answeredAt.Load(); ep != self && a != 0 && a-1 >= from {
			return true
		}
	}
	return false
}

// publish hands a transition of this guard's own to the Sharer. Call with
// no lock held.
func (g *Guard) publish(ep *endpoint, p *Transition) {
	if g.cfg.Share == nil || p.Change == 0 {
		return
	}
	if p.Change == ChangeOpened && !g.networkWorks(ep, p.At) {
		return
	}
	g.cfg.Share.Publish(*p)
}

// Apply takes in a transition published by another guard: an opening is
// adopted unless this guard has newer evidence, an answer closes the
// endpoint, and a reset resets it (every endpoint, for ChangeResetAll),
// all without publishing anything back. An opening is adopted only while
// its Until is ahead, it lasts no longer than its Until, and it is
// ignored when this guard has seen the host answer at or after the first
// failure behind it (Since), or holds an opening of its own that ends
// later. The kill switch does not stop Apply: while it is on, Acquire
// refuses nothing anyway. Apply without a Sharer configured works the
// same way.
func (g *Guard) Apply(t Transition) {
	switch t.Change {
	case ChangeResetAll:
		g.resetAll(false)
		return
	case ChangeReset:
		if key, err := Key(t.Endpoint); err == nil {
			g.reset(key, false)
		}
		return
	case ChangeOpened, ChangeAnswered:
	default:
		return
	}
	key, err := Key(t.Endpoint)
	if err != nil {
		return
	}
	now := g.cfg.Now()
	g.noteTime(now)
	if t.Change == ChangeOpened && !now.Before(t.Until) {
		return
	}
	for {
		ep := g.record(key, t.Change == ChangeOpened)
		if ep == nil {
			return
		}
		ep.mu.Lock()
		if ep.evicted {
			ep.mu.Unlock()
			continue
		}
		var tr transitions
		ep.observe(now, &tr)
		if t.Change == ChangeAnswered {
			if ep.open {
				ep.clear()
				tr.add(ep, Closed)
			}
		} else if g.adoptable(ep, &t) {
			g.adopt(ep, now, &t)
			tr.add(ep, ep.state(now))
		}
		ep.mu.Unlock()
		g.report(ep, &tr)
		return
	}
}

// adoptable reports whether a remote opening may be adopted by ep: no
// answer seen here at or after Since, when the request behind the first
// failure was sent, and no opening of its own that ends later. Call with
// ep.mu held.
//
// The answer's coarse reading is a lower bound of its time, so only an
// answer proven newer than Since blocks the opening, as for this guard's
// own failures (answeredSince). Since is already the earliest instant the
// failures speak for, a whole timeout before they were reported; counting
// an answer up to coarseStep before it as newer as well would keep a node
// that heard the host just before another node's request went out, and
// hang, from adopting the newer evidence.
func (g *Guard) adoptable(ep *endpoint, t *Transition) bool {
	if a := ep.answeredAt.Load(); a != 0 && a-1 >= g.since(t.Since) {
		return false
	}
	return !ep.open || ep.openUntil.Before(t.Until)
}

// adopt opens ep until t.Until on another guard's word. The opening does
// not count towards growth: only this guard's own trips do. For the
// sibling rule it is a counted failure: requests this guard admitted
// before it learned of the opening were in flight with the failures
// behind it, and cannot add to a streak later, so that a straggler here
// does not re-open the cluster after its probe found the host back. Call
// with ep.mu held.
func (g *Guard) adopt(ep *endpoint, now time.Time, t *Transition) {
	ep.boundary = ep.seq.Load()
	g.openPeriod(ep, now, t.At, t.Until)
}

// claimFirst reports whether ep's trial must wait for the cluster's lease
// and, if so, takes the slot for the wait: every Acquire then fails fast
// with RetryAfter 0. The caller must then call claim on a goroutine
// tracked by running. Call with ep.mu held and the slot free.
func (g *Guard) claimFirst(ep *endpoint) bool {
	if g.claimer == nil || ep.claimed == ep.cycle {
		return false
	}
	g.lifeMu.Lock()
	defer g.lifeMu.Unlock()
	if g.closed.Load() {
		return false
	}
	g.running.Add(1)
	ep.claimed = ep.cycle
	ep.setTrial(leaseWait)
	if ep.timer != nil {
		// A caller came before the probe timer fired: the claim
		// starts the probe, and the timer must not hide the lease's.
		ep.timer.Stop()
		ep.timer = nil
	}
	return true
}

// claimInline is how long the first caller after an open period without
// demand waits for the cluster's lease to make it the trial, as it would
// be on a node of its own. A lease is one statement on the store, a
// millisecond or two; a store slower than this leaves the caller refused
// with RetryAfter 0, as every caller is while a trial runs, and the lease,
// when it comes, starts a probe instead.
const claimInline = 50 * time.Millisecond

// claimWait is a caller waiting for the lease (see claimInline): claim
// sends it the trial's ticket, or nil when another guard holds the lease.
type claimWait struct {
	got chan *Ticket // buffer 1
}

// awaitLease waits up to claimInline for claim's word to w and returns
// the trial's ticket if this caller got it. On giving up it withdraws w,
// and takes a ticket claim sent meanwhile.
func (g *Guard) awaitLease(ep *endpoint, w *claimWait) *Ticket {
	timer := time.NewTimer(claimInline)
	defer timer.Stop()
	select {
	case t := <-w.got:
		return t
	case <-timer.C:
	}
	ep.mu.Lock()
	if ep.waiter == w {
		ep.waiter = nil
	}
	ep.mu.Unlock()
	select {
	case t := <-w.got:
		return t
	default:
		// Refused: that is demand, as for any caller refused while the
		// trial is out.
		ep.flags.Or(fAsked)
		return nil
	}
}

// claim asks the Sharer for ep's lease for the open period of cycle. If it
// is held here (or the Sharer fails), the slot is freed and goes to the
// caller waiting for it (see claimInline), or to a probe when the guard
// has one, else the next Acquire is the trial; if another guard holds it,
// the slot stays taken until that guard's result arrives through Apply or
// the lease expires, when this guard asks again.
func (g *Guard) claim(ep *endpoint, cycle uint64) {
	defer g.running.Done()
	ep.mu.Lock()
	until := ep.openUntil
	ep.mu.Unlock()
	lease, err := g.claimer.Claim(g.ctx, ClaimParams{Endpoint: ep.key, Until: until})
	ep.mu.Lock()
	w := ep.waiter
	ep.waiter = nil
	if ep.evicted || ep.cycle != cycle || ep.trial != leaseWait {
		ep.mu.Unlock()
		if w != nil {
			w.got <- nil
		}
		return
	}
	if err == nil && !lease.Held && !g.closed.Load() {
		wait := max(lease.Expires.Sub(g.cfg.Now()), 0)
		ep.timer = time.AfterFunc(wait, func() { g.leaseExpired(ep, cycle) })
		ep.mu.Unlock()
		if w != nil {
			w.got <- nil
		}
		return
	}
	// The slot passes from the lease to this guard's trial, the waiting
	// caller's or a probe, without being freed in between: callers waiting
	// on the slot (Config.TrialWait) then wait on for that trial's outcome
	// instead of waking to find it taken again.
	disabled := g.disabled()
	if w != nil && !disabled {
		t := &Ticket{ep: ep, seq: ep.seq.Add(1), kind: kTrial}
		ep.setTrial(t.seq)
		ep.out.Add(1)
		ep.markUsed()
		ep.mu.Unlock()
		w.got <- t
		return
	}
	var run *probeRun
	if w == nil && !disabled {
		run = g.startProbe(ep)
	}
	if run == nil {
		ep.setTrial(0)
	}
	ep.mu.Unlock()
	if w != nil {
		// Switched off meanwhile: the caller is refused this once.
		w.got <- nil
	}
	if run != nil {
		g.runProbe(run)
	}
}

// leaseExpired asks for the lease again once another guard's lease on ep
// has run out without a result.
func (g *Guard) leaseExpired(ep *endpoint, cycle uint64) {
	ep.mu.Lock()
	if ep.evicted || ep.cycle != cycle || ep.trial != leaseWait {
		ep.mu.Unlock()
		return
	}
	ep.timer = nil
	g.lifeMu.Lock()
	ok := !g.closed.Load()
	if ok {
		g.running.Add(1)
	}
	g.lifeMu.Unlock()
	if !ok {
		ep.setTrial(0)
	}
	ep.mu.Unlock()
	if ok {
		g.claim(ep, cycle)
	}
}

// DefaultLeaseFor is how long a claimed lease holds when StoreShareParams
// leaves LeaseFor zero: long enough for one probe at the transport's
// default header timeout (30 s) to settle and its result to be published.
const DefaultLeaseFor = 40 * time.Second

// ShareStore is implemented by a store that can carry transitions between
// the guards of several processes (store/postgres).
type ShareStore interface {
	GuardShare(p StoreShareParams) (Link, error)
}

// StoreShareParams configures one guard's Link.
type StoreShareParams struct {
	// Node names this process in the cluster; empty draws a random name.
	Node string
	// LeaseFor is how long a claimed lease holds before another node may
	// take it over: more than the longest probe. Zero means
	// DefaultLeaseFor; negative is invalid.
	LeaseFor time.Duration
	// Now is the clock leases are timed by. Nil means time.Now.
	Now func() time.Time
}

// Link is one guard's connection to the others through a store: it is the
// guard's Sharer and Claimer, and Start delivers the other guards'
// transitions to it.
type Link interface {
	Sharer
	Claimer
	// Start loads the openings the other guards published that are still
	// running and passes them to apply (a Guard's Apply), then keeps
	// passing every transition they publish until Close; after a lost
	// connection it loads the openings again. It returns once the first
	// load is done, or with the error that stopped it.
	Start(ctx context.Context, apply func(Transition)) error
	// Close stops delivering, writes what was published before it, and
	// releases the link's connections.
	Close() error
}
