package retry

import (
	"bytes"
	"context"
	"sync"
)

// maxObserveLeaders bounds how many shared writes may be in flight at once,
// on a store that runs that many (retrydriver.Writers). With one at a time a
// leader waits for its commit while the calls behind it wait for the
// leader, and a burst of one-item sightings from four callers goes out as
// writes of one and of three items in turn; with several in flight the
// store flushes their commits together, as it does for separate callers,
// and each still carries whatever queued meanwhile.
const maxObserveLeaders = 4

// observeQueue lets concurrent Observe calls share writes. Up to
// leadersMax calls lead at once; each writes batches of the queued
// calls until its own call is in a batch, then hands its lead to the
// oldest waiting call, so that no caller works for others for ever. An id
// is in at most one batch in flight: a second sighting of it waits for the
// first to be written and is written after it, as a sighting of its own,
// and batches in flight never lock the same rows (each also sorts its ids,
// so that they lock rows in the same order as other nodes' batches).
type observeQueue struct {
	mu       sync.Mutex
	calls    []*observeCall          // waiting for a batch, oldest first
	inFlight map[string]*observeCall // by id, the calls in batches being written
	leaders  int
	// leadersMax is set by New: 1, or what the store runs at once, up to
	// maxObserveLeaders.
	leadersMax int
}

type observeCall struct {
	id   string
	p    ObserveParams
	res  ObserveResult
	err  error
	done chan struct{} // closed when res and err are set
	lead chan struct{} // closed when a waiting call is handed the lead
	// Set under the queue's lock.
	leader bool // leads, or has been handed the lead
	taken  bool // in a batch: it will be written whatever its context does
}

// observeShared records one sighting through the queue. A call whose
// context ends before its sighting is taken into a batch returns the
// context's error and is never written; once taken, it waits for the
// write's answer, which the store bounds, so that an error never stands for
// a sighting that was committed.
func (s *Scheduler) observeShared(ctx context.Context, id string, p ObserveParams) (ObserveResult, error) {
	q := &s.observes
	c := &observeCall{id: id, p: p, done: make(chan struct{}), lead: make(chan struct{})}
	q.mu.Lock()
	q.calls = append(q.calls, c)
	if q.leaders < q.leadersMax {
		q.leaders++
		c.leader = true
		q.mu.Unlock()
		s.leadObserves(ctx, c)
		return c.res, c.err
	}
	q.mu.Unlock()
	select {
	case <-c.done:
		q.mu.Lock()
		if c.leader {
			// Handed the lead just before another leader wrote it.
			q.handOn()
		}
		q.mu.Unlock()
		return c.res, c.err
	case <-c.lead:
		s.leadObserves(ctx, c)
		return c.res, c.err
	case <-ctx.Done():
	}
	q.mu.Lock()
	if c.leader {
		// Handed the lead as the context ended: pass it on, or the calls
		// behind would wait for nobody.
		q.handOn()
	}
	if c.taken {
		q.mu.Unlock()
		<-c.done
		return c.res, c.err
	}
	q.calls = removeCall(q.calls, c)
	q.mu.Unlock()
	return ObserveResult{}, ctx.Err()
}

// leadObserves writes batches until own is in one, then hands the lead on
// and waits for own's write. The writes ignore the leader's cancellation:
// they carry other callers' sightings too, and each store call is bounded
// by the store.
func (s *Scheduler) leadObserves(ctx context.Context, own *observeCall) {
	q := &s.observes
	wctx := context.WithoutCancel(ctx)
	for {
		q.mu.Lock()
		if own.taken {
			q.handOn()
			q.mu.Unlock()
			<-own.done
			return
		}
		batch := q.takeBatch()
		var busy chan struct{}
		if len(batch) == 0 {
			// Every waiting id, own's too, is being written by another
			// leader: own's sighting goes after that write.
			busy = q.inFlight[own.id].done
		}
		q.mu.Unlock()
		if busy != nil {
			<-busy
			continue
		}
		s.writeObserves(wctx, batch)
	}
}

// handOn gives up a lead: to the oldest waiting call that does not lead
// yet, or back to the queue. The caller holds q.mu.
func (q *observeQueue) handOn() {
	for _, c := range q.calls {
		if !c.leader {
			c.leader = true
			close(c.lead)
			return
		}
	}
	q.leaders--
}

// takeBatch removes from the queue the oldest calls whose ids are in no
// batch in flight, one per id and at most MaxAdd, and marks them in
// flight: an id repeated by two callers is written twice, as two
// sightings, one batch after the other. The caller holds q.mu.
func (q *observeQueue) takeBatch() []*observeCall {
	if q.inFlight == nil {
		q.inFlight = make(map[string]*observeCall)
	}
	var batch []*observeCall
	rest := make([]*observeCall, 0, len(q.calls))
	for _, c := range q.calls {
		if len(batch) == MaxAdd || q.inFlight[c.id] != nil {
			rest = append(rest, c)
			continue
		}
		q.inFlight[c.id] = c
		c.taken = true
		batch = append(batch, c)
	}
	q.calls = rest
	return batch
}

// writeObserves writes a batch, one ObserveMany per set of equal
// parameters, and completes its calls.
func (s *Scheduler) writeObserves(ctx context.Context, batch []*observeCall) {
	q := &s.observes
	for len(batch) > 0 {
		p := batch[0].p
		var group, rest []*observeCall
		for _, c := range batch {
			if sameObserveParams(c.p, p) {
				group = append(group, c)
			} else {
				rest = append(rest, c)
			}
		}
		ids := make([]string, len(group))
		for i, c := range group {
			ids[i] = c.id
		}
		res, err := s.observeMany(ctx, ids, p)
		q.mu.Lock()
		for i, c := range group {
			if err != nil {
				c.err = err
			} else {
				c.res = res[i]
			}
			delete(q.inFlight, c.id)
			close(c.done)
		}
		q.mu.Unlock()
		batch = rest
	}
}

func sameObserveParams(a, b ObserveParams) bool {
	return a.Boost == b.Boost && a.AddIfMissing == b.AddIfMissing && a.Priority == b.Priority &&
		a.Source == b.Source && bytes.Equal(a.Payload, b.Payload)
}

func removeCall(calls []*observeCall, c *observeCall) []*observeCall {
	for i, x := range calls {
		if x == c {
			return append(calls[:i:i], calls[i+1:]...)
		}
	}
	return calls
}
