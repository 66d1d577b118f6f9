package budget

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/hostguard/hostguard/budget/budgetdriver"
)

// Group commit. Every admission is one store transaction, and a transaction
// that changes a hot counter holds its row lock until its commit is on disk,
// so one counter could take only as many admissions per second as the disk
// syncs. Instead, admissions that arrive while a batch is in flight wait and
// go together in the next one: one transaction and one sync for all of them,
// each still decided on its own and in order. No goroutine runs in the
// background: the first caller to find the store idle sends the batch, and
// hands the job to a waiting caller when done.

// maxBatch bounds a batch, and so the time its row locks are held.
const maxBatch = 128

// batchTimeout bounds one batch's store call. A batch is sent on behalf of
// several callers, so it cannot run under any one caller's context.
const batchTimeout = 30 * time.Second

type batcher struct {
	st Store

	mu      sync.Mutex
	busy    bool // a batch is in flight, or being formed
	pending []*call
}

type call struct {
	ctx context.Context
	p   budgetdriver.AdmitParams
	res budgetdriver.AdmitResult
	err error
	// wake is signalled once: either the call is finished, or it has been
	// handed the job of sending the next batch (finished false).
	wake     chan struct{}
	finished bool
}

// admit decides one admission, batched with whatever else is waiting.
func (q *batcher) admit(ctx context.Context, p budgetdriver.AdmitParams) (budgetdriver.AdmitResult, error) {
	c := &call{ctx: ctx, p: p, wake: make(chan struct{}, 1)}
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		q.send(c)
		return c.res, c.err
	}
	q.pending = append(q.pending, c)
	q.mu.Unlock()

	select {
	case <-c.wake:
	case <-ctx.Done():
		q.mu.Lock()
		for i, o := range q.pending {
			if o == c {
				q.pending = append(q.pending[:i], q.pending[i+1:]...)
				q.mu.Unlock()
				return budgetdriver.AdmitResult{}, ctx.Err()
			}
		}
		q.mu.Unlock()
		// Already taken into a batch, or handed the job: see it through.
		<-c.wake
	}
	if !c.finished {
		q.send(c)
	}
	return c.res, c.err
}

// send sends lead's admission together with the calls waiting, then passes
// the job on to the next waiting call, if any.
func (q *batcher) send(lead *call) {
	// Callers that the previous batch just answered often come straight
	// back with their next admission: let them queue before the batch is
	// taken, which nearly doubles batches under steady load.
	runtime.Gosched()
	q.mu.Lock()
	n := min(len(q.pending), maxBatch-1)
	batch := make([]*call, 0, n+1)
	batch = append(batch, lead)
	batch = append(batch, q.pending[:n]...)
	q.pending = append(q.pending[:0:0], q.pending[n:]...)
	q.mu.Unlock()

	// A caller whose context ended while it waited is left out.
	live := batch[:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			continue
		}
		live = append(live, c)
	}
	if len(live) > 0 {
		ps := make([]budgetdriver.AdmitParams, len(live))
		for i, c := range live {
			ps[i] = c.p
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(lead.ctx), batchTimeout)
		rs, err := q.st.BudgetAdmit(ctx, ps)
		cancel()
		if err == nil && len(rs) != len(ps) {
			err = errBatchSize
		}
		for i, c := range live {
			if err != nil {
				c.err = err
			} else {
				c.res = rs[i]
			}
		}
	}
	for _, c := range batch {
		if c != lead {
			c.finished = true
			c.wake <- struct{}{}
		}
	}

	q.mu.Lock()
	if len(q.pending) == 0 {
		q.busy = false
		q.mu.Unlock()
		return
	}
	next := q.pending[0]
	q.pending = q.pending[1:]
	q.mu.Unlock()
	next.wake <- struct{}{} // not finished: next sends the next batch
}

var errBatchSize = errors.New("store returned a wrong number of results")
