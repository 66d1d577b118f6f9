package guard

import "time"

// noRoomBackoff is how long the guard stops looking for records to evict
// after finding none: new endpoints go untracked meanwhile.
const noRoomBackoff = time.Second

// StaleAfter is how long a record must go without a new admission before
// the tickets pinning it count as stale, so that the eviction hand may
// reclaim it when nothing else makes room: the tickets then report into
// nothing. Without it, one caller holding MaxEndpoints unreported tickets
// on distinct endpoints would leave every other caller's endpoints
// untracked, a dead host among them. It is long enough that a request in
// flight on an endpoint somebody still uses keeps its record, and short
// enough that keeping the whole table pinned takes MaxEndpoints fresh
// endpoints every StaleAfter, more than the daemon's ticket caps let one
// client hold. The quiet period is timed from the first pass of the hand
// or a sweep that finds no new admission, so it may start a little after
// the last one. A trial is never stale.
const StaleAfter = 10 * time.Second

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
		if ep != nil {
			ep.noteQuiet(now)
		}
		switch {
		case ep == nil:
		case ep.out.Load() > 0 || ep.used.Swap(false):
			ep.seen.Store(now)
		case ep.rank() < 2 && now-ep.seen.Load() >= int64(g.cfg.IdleTTL):
			if g.evict(ep, 1, now) {
				removed++
			}
		}
	}
	return removed
}

// makeRoom evicts records so that a new one fits under MaxEndpoints, and
// reports whether it did. A clock hand walks the records: one marked in
// use since the hand last passed has the mark cleared and is passed over
// once, and one with tickets out is taken only when they are stale (no
// admission for StaleAfter, no trial among them). Closed records without
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
	batch := evictBatch(g.cfg.MaxEndpoints)
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
		if ep == nil {
			continue
		}
		ep.noteQuiet(now)
		if ep.out.Load() > 0 && !ep.stale(ep.seq.Load(), now) {
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
			if g.evict(ep, 0, now) {
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
		if ep != nil && g.evict(ep, rank, now) {
			return true
		}
	}
	g.noRoomUntil = now + int64(noRoomBackoff)
	return false
}

// evictBatch is how many records makeRoom evicts at most in one pass.
func evictBatch(maxEndpoints int) int {
	return max(1, maxEndpoints/16)
}

// noteQuiet starts the quiet period of ep afresh if it admitted a ticket
// since the hand or a sweep last looked. Call with ringMu held.
func (ep *endpoint) noteQuiet(now int64) {
	if s := ep.seq.Load(); s != ep.quietSeq {
		ep.quietSeq, ep.quietSince = s, now
	}
}

// stale reports whether the tickets out on ep, whose admission count was
// seq when read, may be abandoned: none was admitted for StaleAfter and
// none holds the trial slot. Call with ringMu held; the answer about the
// trial is only final with ep.mu held as well.
func (ep *endpoint) stale(seq uint64, now int64) bool {
	return seq == ep.quietSeq && now-ep.quietSince >= int64(StaleAfter) &&
		ep.flags.Load()&fTrial == 0
}

// evict removes ep if it holds no more evidence than rank and has no
// tickets out, or only stale ones. Call with ringMu held.
//
// A hot-path Acquire counts its ticket and takes its number before it
// reads the flags, and the eviction reads the number, then the count, sets
// fEvicted and reads the number again: so an Acquire that missed the flag
// has moved the number the eviction sees (and the record is kept), or was
// counted before the first read, when the record was kept unless that
// ticket was already stale. Trials are admitted under ep.mu, which the
// eviction holds.
func (g *Guard) evict(ep *endpoint, rank int, now int64) bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.evicted || ep.rank() > rank {
		return false
	}
	seq := ep.seq.Load()
	if ep.out.Load() != 0 && !ep.stale(seq, now) {
		return false
	}
	ep.flags.Or(fEvicted)
	if ep.seq.Load() != seq {
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
