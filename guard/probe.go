package guard

import (
	"context"
	"time"
)

// probeRun is one probe: the trial ticket it holds and the context that
// stops it early. A check (see startCheck) only ever closes: its failure
// leaves the opening it tests as it was.
type probeRun struct {
	t       *Ticket
	ctx     context.Context
	cancel  context.CancelFunc
	check   bool
	recheck bool   // the check after a check that hung (see recheck)
	cycle   uint64 // the endpoint's cycle when it started
}

// noteDemand records that a caller was refused during the open period and,
// the first time, arms the timer that starts a probe when the period ends.
// The timer is armed only on demand, so an endpoint nobody asks for costs
// nothing while it is open, and its next Acquire is the trial as without
// probes. Call with ep.mu held.
func (g *Guard) noteDemand(ep *endpoint, now time.Time) {
	if g.cfg.Probe == nil || ep.demand {
		return
	}
	ep.demand = true
	ep.flags.Or(fDemand)
	if g.closed.Load() {
		return
	}
	g.arm(ep, ep.openUntil.Sub(now))
}

// arm starts ep's probe timer for the current cycle. Call with ep.mu held.
func (g *Guard) arm(ep *endpoint, after time.Duration) {
	cycle := ep.cycle
	ep.timer = time.AfterFunc(after, func() { g.probeDue(ep, cycle) })
}

// probeDue runs when an open period with demand has ended. It takes the
// trial slot for a probe unless a caller took it first, and runs the probe
// on the timer's own goroutine.
func (g *Guard) probeDue(ep *endpoint, cycle uint64) {
	// The kill switch is caller code: read it before locking. While the
	// guard is disabled nothing is sent on its behalf; the demand stays,
	// so the first Acquire after it is switched back on starts the probe.
	disabled := g.disabled()
	ep.mu.Lock()
	if ep.evicted || ep.cycle != cycle || ep.timer == nil {
		ep.mu.Unlock()
		return
	}
	ep.timer = nil
	now := g.cfg.Now()
	if now.Before(ep.openUntil) {
		// The clock and the timer disagree (a clock other than
		// time.Now); wait for the clock.
		g.arm(ep, ep.openUntil.Sub(now))
		ep.mu.Unlock()
		return
	}
	var tr transitions
	ep.observe(now, &tr)
	if !disabled && ep.trial == 0 && g.claimFirst(ep) {
		cycle := ep.cycle
		ep.mu.Unlock()
		g.report(ep, &tr)
		g.claim(ep, cycle)
		return
	}
	var run *probeRun
	if !disabled && ep.trial == 0 {
		run = g.startProbe(ep)
	}
	ep.mu.Unlock()
	g.report(ep, &tr)
	if run != nil {
		g.runProbe(run)
	}
}

// startProbe takes ep's trial slot for a probe and returns it, or returns
// nil when no probe may start: the guard is closed or MaxProbes are
// running. The caller must then run it with runProbe. Call with ep.mu held
// and the slot free, or held by a lease this guard hands to the probe.
func (g *Guard) startProbe(ep *endpoint) *probeRun {
	run := g.newProbe(ep, false)
	if run == nil {
		return nil
	}
	// The probe answers the demand; if it ends inconclusive, the next
	// Acquire is an ordinary trial rather than another probe.
	ep.demand = false
	ep.flags.And(^uint32(fDemand))
	if ep.timer != nil {
		ep.timer.Stop()
		ep.timer = nil
	}
	return run
}

// newProbe takes ep's trial slot for a probe (a check, if check) and
// returns it, or returns nil when no probe may start: the guard has no
// Probe, is closed, or MaxProbes are running. Call with ep.mu held and
// the slot free, or held by a lease this guard hands to the probe or a
// check that hung (recheck).
func (g *Guard) newProbe(ep *endpoint, check bool) *probeRun {
	if g.cfg.Probe == nil {
		return nil
	}
	if g.probes.Add(1) > int64(g.cfg.MaxProbes) {
		g.probes.Add(-1)
		return nil
	}
	g.lifeMu.Lock()
	if g.closed.Load() {
		g.lifeMu.Unlock()
		g.probes.Add(-1)
		return nil
	}
	g.running.Add(1)
	g.lifeMu.Unlock()

	t := &Ticket{ep: ep, seq: ep.seq.Add(1), kind: kTrial}
	ep.setTrial(t.seq)
	ep.out.Add(1)
	ep.markUsed()
	ctx, cancel := context.WithCancel(g.ctx)
	run := &probeRun{t: t, ctx: ctx, cancel: cancel, check: check, cycle: ep.cycle}
	ep.probe = run
	if check {
		// Within the open period callers are refused by it, not told
		// to come back at once as while a half-open trial runs.
		ep.flags.Or(fCheck)
	}
	return run
}

// startCheck starts a check of an opening that timeouts just made, when
// the endpoint has been seen answering: a timeout is news about the
// moment its request was sent, a whole wait before it was reported, and a
// host that hung then may have come back since (a flapping host whose
// outage ended while its requests still waited). Nothing admitted after
// those requests has answered, or the failures would not have counted
// (sentBeforeAnAnswer), so the guard asks for such an answer itself: one
// probe, with the wait an answering host needs (probeWait). An answer
// closes the endpoint, by the rule that made the timeouts older news;
// anything else leaves the opening as it was, its end and its growth
// untouched, and the probe at its end still runs on demand. Requests
// fail fast meanwhile, as during any open period, or wait for the check
// with Config.TrialWait; a check that hung is followed by one fresh check
// (recheck). An endpoint never seen answering gets no check: its probe's
// wait would be a whole timeout, and a host that never answered has
// nothing to come back to. Call with ep.mu held, just after the trip.
func (g *Guard) startCheck(ep *endpoint) *probeRun {
	if ep.need.Load() == 0 || ep.trial != 0 {
		return nil
	}
	return g.newProbe(ep, true)
}

// runProbe calls Probe and settles its ticket with the outcome, by the
// same rules as any trial: so a probe started before a Reset reports into
// nothing, and its Release can never free a newer trial's slot.
func (g *Guard) runProbe(run *probeRun) {
	for run != nil {
		run = g.probeOnce(run)
	}
}

// recheck starts the one check that follows a check that hung: its request
// went out before the host came back, as the timeouts behind the opening
// did, and cannot see a recovery since; a fresh one can, and the opening's
// first callers are not refused for a whole period over a request sent
// while the host still hung. The slot passes from the hung check to the
// fresh one without being freed, so callers waiting on it wait on. It
// returns nil when the endpoint is no longer in the opening that check
// was for. Call with ep.mu held.
func (g *Guard) recheck(hung *probeRun) *probeRun {
	ep := hung.t.ep
	if hung.recheck || ep.evicted || !ep.open || ep.cycle != hung.cycle || ep.trial != hung.t.seq ||
		!g.cfg.Now().Before(ep.openUntil) {
		return nil
	}
	run := g.newProbe(ep, true)
	if run != nil {
		run.recheck = true
	}
	return run
}

// probeOnce runs one probe; it returns the fresh check to run next when
// this was a check that hung.
func (g *Guard) probeOnce(run *probeRun) (next *probeRun) {
	defer g.running.Done()
	defer g.probes.Add(-1)
	defer run.cancel()
	defer run.t.Release()
	ep := run.t.ep
	ctx, wait := run.ctx, g.probeWait(ep)
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(run.ctx, wait)
		defer cancel()
	}
	start := g.cfg.Now()
	err := g.cfg.Probe(ctx, ep.key)
	hung := wait > 0 && run.ctx.Err() == nil && ctx.Err() != nil
	ep.mu.Lock()
	if ep.probe == run {
		ep.probe = nil
	}
	if err != nil && run.check && hung {
		next = g.recheck(run)
	}
	ep.mu.Unlock()
	switch {
	case err == nil:
		run.t.AnsweredAfter(g.cfg.Now().Sub(start))
	case run.check:
		// The opening stands as it was; the deferred Release frees the
		// slot for the probe at its end, unless a fresh check took it.
	case hung:
		// The guard's own wait ran out: judged by the wait rule, like
		// any caller's give-up.
		run.t.Failed(&WaitError{Owed: wait, Err: context.DeadlineExceeded})
	default:
		run.t.Failed(err)
	}
	return next
}

// probeWait is how long a probe of ep may wait for its answer: a little
// more than the wait rule needs to count a give-up (above WaitFloor and
// WaitFactor times what the endpoint recently needed to answer), so that a
// probe that started while the host hung does not hold the endpoint's one
// trial for a whole request timeout after it comes back. It is 0, the
// Probe's own timeout, while the endpoint's need is unknown or the rule is
// off.
func (g *Guard) probeWait(ep *endpoint) time.Duration {
	if ep.need.Load() == 0 || g.cfg.WaitFloor < 0 {
		return 0
	}
	return max(withMargin(g.cfg.WaitFloor), answerWait(ep))
}

// answerWait is how long an answer from ep may take before it is late:
// WaitFactor times what ep recently needed, with a margin; 0 while that
// is unknown.
func answerWait(ep *endpoint) time.Duration {
	return withMargin(WaitFactor * time.Duration(ep.need.Load()))
}

// withMargin is d and a quarter more.
func withMargin(d time.Duration) time.Duration { return d + d/4 }

// Close stops the guard's probe timers, cancels the probes running and
// waits for them to return. The guard stays usable afterwards, without
// probes: the first Acquire after an open period is the trial again. Close
// is safe to call more than once and always returns nil; a Guard without
// a Probe has nothing to stop.
func (g *Guard) Close() error {
	g.lifeMu.Lock()
	g.closed.Store(true)
	g.lifeMu.Unlock()
	g.cancel()
	g.lifeMu.Lock()
	if g.coarseTimer != nil {
		g.coarseTimer.Stop()
	}
	g.lifeMu.Unlock()
	for _, ep := range g.snapshot() {
		ep.mu.Lock()
		if ep.timer != nil {
			ep.timer.Stop()
			ep.timer = nil
		}
		ep.mu.Unlock()
	}
	g.running.Wait()
	return nil
}
