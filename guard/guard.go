package guard

import (
	"context"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Guard is a circuit breaker per endpoint. Create one with New and share
// it: all methods are safe for concurrent use. The zero value is not
// usable. Acquire, the ticket's report, and Release are what most callers
// need.
type Guard struct {
	cfg     Config
	base    time.Time // the clock's reading at New; see since
	monoNow bool      // Config.Now is the default, time.Now; see sinceNow

	records atomic.Pointer[table] // endpoint key -> *endpoint; see table.go
	count   atomic.Int64

	// Record creation, eviction and sweeps; never taken on the hot path.
	ringMu      sync.Mutex
	ring        []*endpoint // every record, at its slot; nil for a free slot
	free        []int       // free slots in ring
	hand        int         // the eviction hand's position in ring
	lastSweep   int64       // when the last idle sweep ran, as since
	noRoomUntil int64       // as since; before it, makeRoom does not search again

	// At the cap, which new endpoints earn a record; see door.go.
	door     door
	doorStub *endpoint // the record of every ticket the door lets in: only its g is set
	// Reset and ResetAll calls so far: a ticket the door let in holds
	// the count it was admitted at, and reports nothing once it moved.
	resets atomic.Uint64

	// Probes; see probe.go.
	ctx     context.Context // parent of every probe's context; cancelled by Close
	cancel  context.CancelFunc
	probes  atomic.Int64 // probes running
	closed  atomic.Bool
	lifeMu  sync.Mutex     // orders Close against probes starting
	running sync.WaitGroup // probe goroutines

	// Sharing; see share.go.
	// Callers that waited on a trial (Config.TrialWait), by how their
	// Acquire ended; see TrialWaits.
	waitsAdmitted, waitsRefused, waitsGaveUp atomic.Uint64

	coarse      atomic.Int64 // a recent clock reading, as since; kept by coarseTimer
	coarseTimer *time.Timer
	claimer     Claimer // cfg.Share, if it claims leases
}

// New returns a Guard configured by cfg, with zero fields set to their
// defaults. It panics with the error cfg.Validate returns, and on nothing
// else: check configuration that comes from users with Validate first. A
// Guard with a Probe runs timers and goroutines of its own; Close stops
// them.
func New(cfg Config) *Guard {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	g := &Guard{cfg: cfg.withDefaults(), monoNow: cfg.Now == nil}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.base = g.cfg.Now()
	g.records.Store(newTable(minTableSlots, maphash.MakeSeed()))
	g.door = newDoor(g.cfg.MaxEndpoints)
	g.doorStub = &endpoint{g: g}
	if g.cfg.Share != nil {
		g.claimer, _ = g.cfg.Share.(Claimer)
		g.startCoarse()
	}
	return g
}

// since returns t as nanoseconds after the guard's base reading, so that
// instants fit in an atomic word. Readings from time.Now carry a monotonic
// clock, and Sub uses it.
func (g *Guard) since(t time.Time) int64 {
	return int64(t.Sub(g.base))
}

// sinceNow is since(Now()). With the default clock it reads only the
// monotonic clock (time.Since does), half the cost of time.Now, which
// reads the wall clock too: on a virtual machine's clock source that is
// most of a fast-fail's cost.
func (g *Guard) sinceNow() int64 {
	if g.monoNow {
		return int64(time.Since(g.base))
	}
	return g.since(g.cfg.Now())
}

// Acquire asks to contact the endpoint of rawURL. It returns a ticket the
// caller must settle: Answered when any HTTP response arrived, Failed with
// the error otherwise, and Release in a defer for every other path. While
// the endpoint is open, or half-open with its trial out, it returns an
// *OpenError instead and the request must not be sent; with
// Config.TrialWait it first waits a moment for the trial's outcome. A URL
// that names no endpoint returns an error wrapping ErrBadURL.
//
// On a closed endpoint Acquire takes no lock, reads no clock and makes one
// allocation, the ticket.
func (g *Guard) Acquire(rawURL string) (*Ticket, error) {
	return g.acquire(context.Background(), rawURL, false)
}

// AcquireContext is Acquire for a caller with a context, which only a wait
// for the half-open trial (Config.TrialWait) consults. The wait is cut to
// leave the caller, by ctx's deadline, the time the endpoint needs to
// answer once it goes out; when that leaves nothing it does not wait and
// is refused at once. When ctx is done during the wait, AcquireContext
// returns an error wrapping ErrGaveUp and context.Cause(ctx): the request
// was not sent, and the caller counts as asking for the endpoint, as a
// refused one does.
func (g *Guard) AcquireContext(ctx context.Context, rawURL string) (*Ticket, error) {
	return g.acquire(ctx, rawURL, false)
}

// AcquireExempt is Acquire for requests that are expected to fail, such as
// a discovery walk over candidate paths: it is never refused, its failures
// never count and never take the trial slot, but its answers clear the
// endpoint like any other. It never waits, so it takes no context.
func (g *Guard) AcquireExempt(rawURL string) (*Ticket, error) {
	return g.acquire(context.Background(), rawURL, true)
}

func (g *Guard) acquire(ctx context.Context, rawURL string, exempt bool) (*Ticket, error) {
	key, err := Key(rawURL)
	if err != nil {
		return nil, err
	}
	if g.disabled() {
		return untracked(key), nil
	}
	var kind uint8
	if exempt {
		kind = kExempt
	}
	w := trialWaiter{ctx: ctx} // this caller's wait on trials, once it began one
	for {
		ep, atDoor := g.admit(key)
		if atDoor {
			g.countWait(&w, nil)
			return g.doorTicket(key, kind), nil
		}
		if ep == nil {
			// Every record is busy and the cap is reached: let the
			// request through untracked rather than refuse or evict
			// evidence that is in use.
			g.countWait(&w, nil)
			return untracked(key), nil
		}
		// The hot path. The count goes up before the flags are read
		// again, and the number is taken before them too: an eviction that
		// sets fEvicted then finds the ticket counted, and a trip that
		// sets fOpen then reads a boundary that includes the ticket, so
		// a ticket admitted in the same instant as a trip is its sibling.
		f := ep.flags.Load()
		if f&fEvicted == 0 && (f&fOpen == 0 || exempt) {
			ep.out.Add(1)
			seq := ep.seq.Add(1)
			if f = ep.flags.Load(); f&fEvicted == 0 && (f&fOpen == 0 || exempt) {
				ep.markUsed()
				g.countWait(&w, nil)
				return &Ticket{ep: ep, seq: seq, kind: kind}, nil
			}
			ep.out.Add(-1)
		}
		if f&fEvicted != 0 {
			// The eviction decides under the record's lock; once it is
			// free, the record is either gone from the map or kept, and
			// the next look finds which.
			ep.awaitEviction()
			continue
		}
		if t, err, ok := g.admitOpen(ep, f, &w); ok {
			g.countWait(&w, err)
			return t, err
		}
	}
}

// countWait counts an Acquire that waited on a trial by how it ended:
// admitted when err is nil, given up on a *GaveUpError, else refused.
func (g *Guard) countWait(w *trialWaiter, err error) {
	if w.until.IsZero() {
		return
	}
	switch err.(type) {
	case nil:
		g.waitsAdmitted.Add(1)
	case *GaveUpError:
		g.waitsGaveUp.Add(1)
	default:
		g.waitsRefused.Add(1)
	}
}

// TrialWaitCounts counts the Acquires that waited on an endpoint's
// half-open trial (Config.TrialWait), by how they ended.
type TrialWaitCounts struct {
	// Admitted went out: the trial answered, or it ended without a
	// report and the caller became the next trial.
	Admitted uint64
	// Refused were refused after the wait: the trial failed, or the wait
	// ran out while a trial was still out.
	Refused uint64
	// GaveUp ended with their context (AcquireContext) during the wait.
	GaveUp uint64
}

// TrialWaits reports the Acquires that waited on an endpoint's half-open
// trial since New.
func (g *Guard) TrialWaits() TrialWaitCounts {
	return TrialWaitCounts{Admitted: g.waitsAdmitted.Load(), Refused: g.waitsRefused.Load(), GaveUp: g.waitsGaveUp.Load()}
}

// admitOpen decides on a non-exempt acquisition of a record that was open
// when its flags were read. ok is false when ep was evicted meanwhile, or
// the caller waited for a trial's outcome (see awaitTrial; w.until is
// then set), and the caller must look the key up again.
func (g *Guard) admitOpen(ep *endpoint, f uint32, w *trialWaiter) (t *Ticket, err error, ok bool) {
	if f&(fTrial|fCheck) == fTrial {
		if g.waitLeft(ep, w) > 0 {
			// Wait for the trial's outcome rather than refuse.
			err := g.awaitSlot(ep, w, false)
			return nil, err, err != nil
		}
		// Half-open with the trial out, a probe or a caller's: refuse
		// without the lock or the clock. The step to half-open was
		// reported when the trial was admitted. The refusal is demand:
		// if the trial fails, the next open period ends in a probe.
		if f&fAsked == 0 {
			ep.flags.Or(fAsked)
		}
		return nil, ep.openError(0), true
	}
	if f&fCheck != 0 && g.waitLeft(ep, w) > 0 {
		// A check of the opening is out: wait for its outcome as for a
		// trial's. Its answer closes the endpoint; its failure leaves the
		// open period, which then refuses this caller.
		err := g.awaitSlot(ep, w, true)
		return nil, err, err != nil
	}
	// Most fast-fails in the open period take no lock either: once any
	// demand a probe needs is noted, there is nothing to change.
	if f&fDemand != 0 || g.cfg.Probe == nil {
		if left := ep.openNs.Load() - g.sinceNow(); left > 0 {
			return nil, ep.openError(time.Duration(left)), true
		}
	}
	now := g.cfg.Now()
	ep.mu.Lock()
	if ep.evicted {
		ep.mu.Unlock()
		return nil, nil, false
	}
	if !ep.open {
		// Closed since the flags were read.
		t := &Ticket{ep: ep, seq: ep.seq.Add(1)}
		ep.out.Add(1)
		ep.markUsed()
		ep.mu.Unlock()
		return t, nil, true
	}
	if now.Before(ep.openUntil) {
		left := ep.openUntil.Sub(now)
		g.noteDemand(ep, now)
		ep.mu.Unlock()
		return nil, ep.openError(left), true
	}
	var tr transitions
	ep.observe(now, &tr)
	if ep.trial != 0 && g.waitLeft(ep, w) > 0 {
		if err := g.awaitTrial(ep, &tr, w); err != nil {
			return nil, err, true
		}
		return nil, nil, false
	}
	if ep.trial != 0 {
		ep.flags.Or(fAsked)
		ep.mu.Unlock()
		g.report(ep, &tr)
		return nil, ep.openError(0), true
	}
	if g.claimFirst(ep) {
		// Sharing: the cluster runs one trial per open period, so this
		// guard asks for the lease first. Without demand this caller
		// would be the trial: it waits a moment for the lease.
		cycle := ep.cycle
		var cw *claimWait
		if !ep.demand {
			cw = &claimWait{got: make(chan *Ticket, 1)}
			ep.waiter = cw
		} else {
			ep.flags.Or(fAsked)
		}
		ep.mu.Unlock()
		g.report(ep, &tr)
		go g.claim(ep, cycle)
		if cw != nil {
			if t := g.awaitLease(ep, cw); t != nil {
				return t, nil, true
			}
		}
		if g.waitLeft(ep, w) > 0 {
			// The lease went to another guard, or its claim or this
			// guard's probe is still out: wait for that trial's outcome
			// as for any trial, which reaches this guard through Apply.
			return nil, nil, false
		}
		return nil, ep.openError(0), true
	}
	if ep.demand {
		// Callers asked for the endpoint while it was open: the guard
		// tries it itself, and this caller does not wait on a host that
		// may still be down. Without demand this caller is the trial, as
		// the design's half-open rule says ("No demand, no probe").
		if run := g.startProbe(ep); run != nil {
			ep.flags.Or(fAsked)
			ep.mu.Unlock()
			g.report(ep, &tr)
			go g.runProbe(run)
			if g.waitLeft(ep, w) > 0 {
				// Wait for the probe's outcome, as the callers after
				// this one do.
				return nil, nil, false
			}
			return nil, ep.openError(0), true
		}
	}
	t = &Ticket{ep: ep, seq: ep.seq.Add(1), kind: kTrial}
	ep.setTrial(t.seq)
	ep.out.Add(1)
	ep.markUsed()
	ep.mu.Unlock()
	g.report(ep, &tr)
	return t, nil, true
}

// trialWait is how long a caller that finds ep's trial out may wait for
// its outcome (Config.TrialWait): what an answering host needs, as a
// probe's wait without the floor, at most TrialWait; 0 for no wait.
func (g *Guard) trialWait(ep *endpoint) time.Duration {
	if g.cfg.TrialWait <= 0 {
		return 0
	}
	return min(answerWait(ep), g.cfg.TrialWait)
}

// trialWaiter is one Acquire's wait on an endpoint's trials.
type trialWaiter struct {
	ctx   context.Context // the caller's; its Done ends the wait
	until time.Time       // the end of the wait, once it began one
}

// waitLeft is what is left of a caller's wait on ep's trials: before it
// began one (w.until zero), all of trialWait, cut to leave the caller the
// time ep needs to answer before its context's deadline; after, the time
// to w.until. The wait is one per Acquire, however many trials it spans:
// a caller woken by a trial that ended without a report, whose slot
// another caller then took, waits on for that one within what is left.
// It is measured on the runtime's clock, the one its timer runs on.
func (g *Guard) waitLeft(ep *endpoint, w *trialWaiter) time.Duration {
	if !w.until.IsZero() {
		return time.Until(w.until)
	}
	left := g.trialWait(ep)
	if left > 0 {
		if dl, ok := w.ctx.Deadline(); ok {
			left = min(left, time.Until(dl)-time.Duration(ep.need.Load()))
		}
	}
	return left
}

// awaitSlot waits, as awaitTrial, for the outcome of what holds ep's slot
// when its flags were read: a trial, or a check of the opening if check.
// It takes the lock, so that the settling cannot be missed, and returns
// nil at once when that changed meanwhile; the caller then looks again,
// unless it gave up (the error). A caller waiting for a check asked
// during the open period, so it is demand even if it gives up (and the
// check's answer, closing the endpoint, forgets the demand).
func (g *Guard) awaitSlot(ep *endpoint, w *trialWaiter, check bool) error {
	ep.mu.Lock()
	if ep.evicted || ep.trial == 0 || (ep.flags.Load()&fCheck != 0) != check {
		ep.mu.Unlock()
		return nil
	}
	if check {
		g.noteDemand(ep, g.cfg.Now())
	}
	return g.awaitTrial(ep, nil, w)
}

// awaitTrial waits until ep's trial slot is freed, the caller's wait runs
// out or its context is done, after reporting tr. Call with ep.mu held
// and the slot taken; it releases the lock. Unless the caller gave up,
// which it returns as an error, the caller then looks again: it goes out
// if the trial answered, is refused by the open period if it failed, and,
// once its wait is over, is refused with RetryAfter 0 if a trial is still
// out. A caller refused then, or that gave up, is demand as for any
// caller refused while the trial is out.
func (g *Guard) awaitTrial(ep *endpoint, tr *transitions, w *trialWaiter) error {
	done := ep.trialSettled()
	left := g.waitLeft(ep, w)
	if w.until.IsZero() {
		w.until = time.Now().Add(left)
	}
	ep.mu.Unlock()
	if tr != nil {
		g.report(ep, tr)
	}
	timer := time.NewTimer(left)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	case <-w.ctx.Done():
		ep.flags.Or(fAsked)
		return &GaveUpError{Endpoint: ep.key, Cause: context.Cause(w.ctx)}
	}
	return nil
}

// openError returns the fast-fail error for RetryAfter left, rounded up to
// a whole millisecond. The rounding makes consecutive fast-fails within a
// millisecond share one error value, so that refusing costs no allocation;
// a caller that waits RetryAfter is never early, and at most a millisecond
// late.
func (ep *endpoint) openError(left time.Duration) *OpenError {
	if rem := left % time.Millisecond; rem != 0 {
		left += time.Millisecond - rem
	}
	if e := ep.openErr.Load(); e != nil && e.RetryAfter == left {
		return e
	}
	e := &OpenError{Endpoint: ep.key, RetryAfter: left}
	ep.openErr.Store(e)
	return e
}

// Reset forgets what the guard knows against the endpoint of rawURL, for a
// user who asked to try it now: the endpoint becomes closed and reports
// from tickets acquired before the reset no longer count. It creates the
// record if there is none, and works while the guard is disabled. It is
// best effort: when every record is busy and the cap is reached there is
// nothing held for the endpoint to reset, and it returns nil.
func (g *Guard) Reset(rawURL string) error {
	key, err := Key(rawURL)
	if err != nil {
		return err
	}
	g.reset(key, true)
	return nil
}

// reset resets the record of key, publishing the reset to the Sharer when
// publish is set: false for a reset another guard published.
func (g *Guard) reset(key string, publish bool) {
	g.resets.Add(1)
	for {
		ep := g.record(key, true)
		if ep == nil {
			if publish && g.cfg.Share != nil {
				g.cfg.Share.Publish(Transition{Endpoint: key, Change: ChangeReset, At: g.cfg.Now()})
			}
			return
		}
		ep.mu.Lock()
		if ep.evicted {
			ep.mu.Unlock()
			continue
		}
		ep.epoch++
		tr := g.resetLocked(ep)
		if publish {
			tr.pub = Transition{Endpoint: key, Change: ChangeReset, At: g.cfg.Now()}
		}
		ep.markUsed()
		ep.mu.Unlock()
		g.report(ep, &tr)
		return
	}
}

// ResetAll is Reset for every endpoint at once, for a change of generation
// such as a user turning the guard back on after changing what it guards:
// every cooldown and streak is cleared, growth starts again at OpenFor,
// running probes are cancelled, and reports from tickets acquired before
// ResetAll count for nothing (an answer still clears, as after Reset),
// while their Release stays harmless and can free no newer trial's slot.
// Each record's Epoch goes up by one. Records are kept, so Len does not
// change. Turning the kill switch off and on again resets nothing: the
// evidence from before it was switched off still stands.
func (g *Guard) ResetAll() {
	g.resetAll(true)
}

// resetAll is ResetAll, publishing it to the Sharer when publish is set:
// false for a ResetAll another guard published.
func (g *Guard) resetAll(publish bool) {
	type done struct {
		ep *endpoint
		tr transitions
	}
	var reports []done
	g.resets.Add(1)
	g.ringMu.Lock()
	for _, ep := range g.ring {
		if ep == nil {
			continue
		}
		ep.mu.Lock()
		if !ep.evicted {
			ep.epoch++
			if tr := g.resetLocked(ep); tr.n > 0 {
				reports = append(reports, done{ep, tr})
			}
		}
		ep.mu.Unlock()
	}
	g.ringMu.Unlock()
	for i := range reports {
		g.report(reports[i].ep, &reports[i].tr)
	}
	if publish && g.cfg.Share != nil {
		g.cfg.Share.Publish(Transition{Change: ChangeResetAll, At: g.cfg.Now()})
	}
}

// resetLocked closes ep and discards the reports of every ticket admitted
// so far. Call with ep.mu held.
func (g *Guard) resetLocked(ep *endpoint) transitions {
	var tr transitions
	ep.observe(g.cfg.Now(), &tr)
	ep.resetSeq = ep.seq.Load()
	ep.clear()
	tr.add(ep, Closed)
	return tr
}

// State returns the state of the endpoint of rawURL: HalfOpen as soon as
// the open period has passed, before any trial is admitted. An endpoint
// the guard holds no record for, or a URL Key rejects, is Closed. State
// reports the record also while the guard is disabled.
func (g *Guard) State(rawURL string) State {
	key, err := Key(rawURL)
	if err != nil {
		return Closed
	}
	ep := g.record(key, false)
	if ep == nil {
		return Closed
	}
	ep.mu.Lock()
	if !ep.open {
		ep.mu.Unlock()
		return Closed
	}
	now := g.cfg.Now()
	var tr transitions
	ep.observe(now, &tr)
	st := ep.state(now)
	ep.mu.Unlock()
	g.report(ep, &tr)
	return st
}

// Len returns the number of endpoint records held.
func (g *Guard) Len() int {
	return int(g.count.Load())
}

// record returns the record for key, creating it if create is set and the
// cap allows. It returns nil when there is none.
func (g *Guard) record(key string, create bool) *endpoint {
	if ep := g.records.Load().get(key); ep != nil {
		return ep
	}
	if !create {
		return nil
	}
	return g.create(key)
}

// admit is record for Acquire: at the cap, a new endpoint the door keeps
// out gets no record, and atDoor is set.
func (g *Guard) admit(key string) (ep *endpoint, atDoor bool) {
	if ep := g.records.Load().get(key); ep != nil {
		return ep, false
	}
	// The door stands from the first record one eviction pass would
	// make room for: otherwise every pass would let a batch in unasked.
	if g.count.Load() > int64(g.cfg.MaxEndpoints-evictBatch(g.cfg.MaxEndpoints)) &&
		!g.door.seenAgain(key) {
		return nil, true
	}
	return g.create(key), false
}

// create returns the record for key, making it, evicting another if the
// cap is reached; nil when there is no room.
func (g *Guard) create(key string) *endpoint {
	// The record is built before ringMu is taken, so that the allocation
	// (and any GC assist it brings) does not lengthen the one section all
	// new endpoints queue for; a racing goroutine that made it first
	// leaves this one to the collector.
	ep := &endpoint{g: g, key: strings.Clone(key)}
	g.ringMu.Lock()
	defer g.ringMu.Unlock()
	// Records are created only under ringMu: one a racing goroutine made
	// before it was taken is in the current table.
	t := g.records.Load()
	if ep := t.get(key); ep != nil {
		return ep
	}
	now := g.sinceNow()
	g.maybeSweep(now)
	if g.count.Load() >= int64(g.cfg.MaxEndpoints) && !g.makeRoom(now) {
		return nil
	}
	ep.quietSince = now
	ep.seen.Store(now)
	// Storing the table pointer only when it changed keeps its cache line
	// shared between the cores that read it on every Acquire.
	if nt := t.put(ep, g.ring); nt != t {
		g.records.Store(nt)
	}
	if n := len(g.free); n > 0 {
		ep.slot = g.free[n-1]
		g.free = g.free[:n-1]
		g.ring[ep.slot] = ep
	} else {
		ep.slot = len(g.ring)
		g.ring = append(g.ring, ep)
	}
	g.count.Add(1)
	return ep
}

// snapshot returns the records held now, for walks that lock each record
// in turn and may report transitions, which must not happen under ringMu.
func (g *Guard) snapshot() []*endpoint {
	g.ringMu.Lock()
	defer g.ringMu.Unlock()
	out := make([]*endpoint, 0, g.count.Load())
	for _, ep := range g.ring {
		if ep != nil {
			out = append(out, ep)
		}
	}
	return out
}

// report passes queued transitions to OnTransition and the one to share,
// if any, to the Sharer. Call with no lock held.
func (g *Guard) report(ep *endpoint, tr *transitions) {
	if g.cfg.OnTransition != nil {
		for _, t := range tr.list[:tr.n] {
			g.cfg.OnTransition(ep.key, t.from, t.to)
		}
	}
	g.publish(ep, &tr.pub)
}
