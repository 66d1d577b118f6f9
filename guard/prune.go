package guard

import (
	"cmp"
	"slices"
	"time"
)

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
// use marks the record, and a sweep that finds the mark clears it and
// notes the time. A record is removed by a sweep at least IdleTTL after the
// last sweep (or its creation) that saw it in use, so never sooner than
// IdleTTL after its last use, and later by at most the time between
// sweeps.
func (g *Guard) Prune() int {
	g.pruneMu.Lock()
	defer g.pruneMu.Unlock()
	return g.sweep(g.cfg.Now())
}

// maybeSweep sweeps if IdleTTL/4 has passed since the last sweep and no
// other sweep or eviction is running.
func (g *Guard) maybeSweep(now time.Time) {
	due := func() bool { return now.UnixNano()-g.lastSweep.Load() >= int64(g.cfg.IdleTTL/4) }
	if due() && g.pruneMu.TryLock() {
		if due() {
			g.sweep(now)
		}
		g.pruneMu.Unlock()
	}
}

// sweep prunes idle closed records. Call with pruneMu held.
func (g *Guard) sweep(now time.Time) int {
	g.lastSweep.Store(now.UnixNano())
	removed := 0
	g.records.Range(func(_, v any) bool {
		ep := v.(*endpoint)
		ep.mu.Lock()
		idle := false
		switch {
		case ep.evicted:
		case ep.out > 0 || ep.touched:
			ep.touched = false
			ep.seen = now
		case !ep.open && now.Sub(ep.seen) >= g.cfg.IdleTTL:
			idle = true
			ep.evicted = true
		}
		ep.mu.Unlock()
		if idle {
			g.forget(ep)
			removed++
		}
		return true
	})
	return removed
}

// makeRoom evicts records so that a new one fits under MaxEndpoints. Closed
// records go first, those without any evidence before those with a streak,
// and among equals the least recently used; open and half-open records go
// only when no closed one is left, and a record with tickets out never
// goes. Records without evidence are evicted in a batch of about a
// sixteenth of the cap, so that a stream of new endpoints does not scan
// every record for each one; the others only one at a time. When nothing
// could be evicted, further attempts wait for noRoomBackoff, so that a
// guard full of busy records does not scan them for every new endpoint.
func (g *Guard) makeRoom(now time.Time) {
	if now.UnixNano() < g.noRoomUntil.Load() {
		return
	}
	g.pruneMu.Lock()
	defer g.pruneMu.Unlock()
	max := int64(g.cfg.MaxEndpoints)
	if g.count.Load() < max {
		return
	}
	defer func() {
		if g.count.Load() >= max {
			g.noRoomUntil.Store(now.Add(noRoomBackoff).UnixNano())
		}
	}()
	type candidate struct {
		ep      *endpoint
		rank    int
		touched bool
		seen    time.Time
	}
	var cands []candidate
	g.records.Range(func(_, v any) bool {
		ep := v.(*endpoint)
		ep.mu.Lock()
		if !ep.evicted && ep.out == 0 {
			cands = append(cands, candidate{ep, ep.rank(), ep.touched, ep.seen})
		}
		ep.mu.Unlock()
		return true
	})
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		if a.touched != b.touched {
			if a.touched {
				return 1
			}
			return -1
		}
		return a.seen.Compare(b.seen)
	})
	batchTarget := max - 1 - max/16
	for _, c := range cands {
		n := g.count.Load()
		if n < max && (c.rank > 0 || n <= batchTarget) {
			return
		}
		g.evict(c.ep, c.rank)
	}
}

// evict removes ep if it is still idle of tickets and holds no more
// evidence than when it was chosen.
func (g *Guard) evict(ep *endpoint, rank int) {
	ep.mu.Lock()
	ok := !ep.evicted && ep.out == 0 && ep.rank() <= rank
	if ok {
		ep.evicted = true
		ep.endCycle()
	}
	ep.mu.Unlock()
	if ok {
		g.forget(ep)
	}
}

// forget drops an evicted record from the map. A goroutine that loaded it
// just before sees evicted under its lock and looks the key up again.
func (g *Guard) forget(ep *endpoint) {
	if g.records.CompareAndDelete(ep.key, ep) {
		g.count.Add(-1)
	}
}
