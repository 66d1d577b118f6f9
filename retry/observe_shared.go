package retry

import (
	"bytes"
	"context"
	"sync"
)

// observeQueue lets concurrent Observe calls share writes. One call at a
// time leads: it writes batches of the queued calls until its own call is
// written, then hands the lead to the oldest waiting call, so that no
// caller works for others for ever.
type observeQueue struct {
	mu      sync.Mutex
	calls   []*observeCall
	leading bool
}

type observeCall struct {
	id     string
	p      ObserveParams
	res    ObserveResult
	err    error
	done   chan struct{} // closed when res and err are set
	lead   chan struct{} // closed when this call is handed the lead
	leader bool          // set, under the queue's lock, with lead
}

// observeShared records one sighting through the queue.
func (s *Scheduler) observeShared(ctx context.Context, id string, p ObserveParams) (ObserveResult, error) {
	q := &s.observes
	c := &observeCall{id: id, p: p, done: make(chan struct{}), lead: make(chan struct{})}
	q.mu.Lock()
	q.calls = append(q.calls, c)
	if !q.leading {
		q.leading = true
		q.mu.Unlock()
		s.leadObserves(ctx, c)
		return c.res, c.err
	}
	q.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-c.lead:
		s.leadObserves(ctx, c)
		return c.res, c.err
	case <-ctx.Done():
	}
	q.mu.Lock()
	if c.leader {
		// Handed the lead as the context ended: lead anyway, or nobody
		// would write the calls that wait.
		q.mu.Unlock()
		s.leadObserves(ctx, c)
		return c.res, c.err
	}
	q.calls = removeCall(q.calls, c) // not written yet: drop it
	q.mu.Unlock()
	select {
	case <-c.done: // written meanwhile
		return c.res, c.err
	default:
		return ObserveResult{}, ctx.Err()
	}
}

// leadObserves writes batches until own is written, then hands the lead
// on. The writes ignore the leader's cancellation: they carry other
// callers' sightings too, and each store call is bounded by the store.
func (s *Scheduler) leadObserves(ctx context.Context, own *observeCall) {
	q := &s.observes
	wctx := context.WithoutCancel(ctx)
	for {
		q.mu.Lock()
		batch := takeObserveBatch(&q.calls)
		q.mu.Unlock()
		s.writeObserves(wctx, batch)
		select {
		case <-own.done:
		default:
			continue
		}
		break
	}
	q.mu.Lock()
	if len(q.calls) == 0 {
		q.leading = false
	} else {
		next := q.calls[0]
		next.leader = true
		close(next.lead)
	}
	q.mu.Unlock()
}

// takeObserveBatch removes from calls the oldest ones with distinct ids,
// at most MaxAdd: an id repeated by two callers is written twice, as two
// sightings, in two batches.
func takeObserveBatch(calls *[]*observeCall) []*observeCall {
	seen := make(map[string]bool, len(*calls))
	var batch, rest []*observeCall
	for _, c := range *calls {
		if seen[c.id] || len(batch) == MaxAdd {
			rest = append(rest, c)
			continue
		}
		seen[c.id] = true
		batch = append(batch, c)
	}
	*calls = rest
	return batch
}

// writeObserves writes a batch, one ObserveMany per set of equal
// parameters, and completes its calls.
func (s *Scheduler) writeObserves(ctx context.Context, batch []*observeCall) {
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
		for i, c := range group {
			if err != nil {
				c.err = err
			} else {
				c.res = res[i]
			}
			close(c.done)
		}
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
