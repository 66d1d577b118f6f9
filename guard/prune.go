package guard

import "time"

// noRoomBackoff is how long the guard stops looking for records to evict
// after finding none: new endpoints go untracked meanwhile.
const noRoomBackoff = time.Second

// Prune removes the closed records that have had no tickets out and no
// activity for at least IdleTTL, and returns how many it removed. The guard
// also prunes by itself, at most every IdleTTL/4, when it creates a record;
// a long-running program that wants Len to track idle endpoints closely can
// call Prune on a timer.
//
// Idleness is measured without reading the clock on the hot path: every
// use marks the record, and a sweep (or the eviction hand) that finds the
// mark clears it and notes the time. A record is removed by a sweep at
// least IdleTTL after the last sweep (or its creation) that saw it in use,
// so never sooner than IdleTTL after its last use, and later by at most
// the time between sweeps.
func (g *Guard) Prune() int {
	g.ringMu.Lock()
	defer g.ringMu.Unlock()
	return g.sweep(g.since(g.cfg.Now()))
}

// maybeSweep sweeps if IdleTTL/4 has passed since the last sweep. Call
// with ringMu held.
func (g *Guard) maybeSweep(now int64) {
	if now-g.lastSweep >= int64(g.cfg.IdleTTL/4) {
		g.sweep(now)
	}
}

// sweep prunes idle closed records. Call with ringMu held.
func (g *Guard) sweep(now int64) int {
	g.lastSweep = now
	removed := 0
	for _, ep := range g.ring {
		switch {
		case ep == nil:
		case ep.out.Load() > 0 || ep.used.Swap(false):
			ep.seen.Store(now)
		case ep.rank() < 2 && now-ep.seen.Load() >= int64(g.cfg.IdleTTL):
			if g.evict(ep, 1) {
				removed++
			}
		}
	}
	return removed
}

// makeRoom evicts records so that a new one fits under MaxEndpoints, and
// reports whether it did. A clock hand walks the records: one marked in
// use since the hand last passed has the mark cleared and is passed over
// once, and one with tickets out is never taken. Closed records without
// evidence go first, in a batch of about a sixteenth of the cap so that a
// stream of new endpoints moves the hand a few steps per record on average
// rather than over every record; then, only when the hand has gone round
// once without finding one, a single record in order of preference: a
// closed one without evidence that was in use, a closed one with a
// streak, an open or half-open one. When nothing could be evicted, further
// attempts wait for noRoomBackoff, so that a guard full of busy records
// does not walk them for every new endpoint. Call with ringMu held.
func (g *Guard) makeRoom(now int64) bool {
	if now < g.noRoomUntil {
		return false
	}
	batch := max(1, g.cfg.MaxEndpoints/16)
	evicted := 0
	var fallback [3]*endpoint // the first candidate of each rank the hand passed
	for range len(g.ring) {
		if evicted >= batch {
			break
		}
		if g.hand >= len(g.ring) {
			g.hand = 0
		}
		ep := g.ring[g.hand]
		g.hand++
		if ep == nil || ep.out.Load() > 0 {
			continue
		}
		rank := ep.rank()
		if ep.used.Load() {
			ep.used.Store(false)
			ep.seen.Store(now)
			if rank == 0 && fallback[0] == nil {
				fallback[0] = ep
			}
			continue
		}
		if rank == 0 {
			if g.evict(ep, 0) {
				evicted++
			}
			continue
		}
		if fallback[rank] == nil {
			fallback[rank] = ep
		}
	}
	if evicted > 0 {
		return true
	}
	for rank, ep := range fallback {
		if ep != nil && g.evict(ep, rank) {
			return true
		}
	}
	g.noRoomUntil = now + int64(noRoomBackoff)
	return false
}

// evict removes ep if it has no tickets out and holds no more evidence
// than rank. Call with ringMu held.
//
// A hot-path Acquire counts its ticket before it reads the flags, and the
// eviction sets fEvicted before it reads the count: so either the eviction
// sees the ticket and keeps the record, or the Acquire sees the flag and
// looks again, never neither.
func (g *Guard) evict(ep *endpoint, rank int) bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.evicted || ep.out.Load() != 0 || ep.rank() > rank {
		return false
	}
	ep.flags.Or(fEvicted)
	if ep.out.Load() != 0 {
		ep.flags.And(^uint32(fEvicted))
		return false
	}
	ep.evicted = true
	ep.endCycle()
	g.records.Load().remove(ep)
	g.count.Add(-1)
	g.ring[ep.slot] = nil
	g.free = append(g.free, ep.slot)
	return true
}

// awaitEviction returns once an eviction that has set fEvicted on ep has
// decided, since it decides holding ep's lock.
func (ep *endpoint) awaitEviction() {
	ep.mu.Lock()
	defer ep.mu.Unlock()
}
