package client

import (
	"context"
	"errors"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/failure"
)

// minKeep bounds how often Run renews a ticket, whatever the daemon's
// lease: a daemon with a tiny lease must not be asked in a tight loop.
const minKeep = 100 * time.Millisecond

// Run sends one request of the caller's under a guard ticket for u, as
// the Python and TypeScript clients' guarded does. It acquires the ticket
// first (returning ErrFastFail without calling fn when the endpoint is
// open), renews the ticket's lease while fn runs, and reports how fn went:
// answered when it returns nil, failed with the class failure.Classify
// gives its error when that class is host-level (a timeout, a refusal, a
// DNS failure: evidence that nobody answered), inconclusive otherwise.
//
// fn makes the request with its own HTTP client and returns nil when any
// HTTP answer came, a 5xx included: an answer is proof the host is there.
// Run returns fn's error; a report that cannot be delivered is returned
// only when fn succeeded (the ticket's lease then releases it as
// inconclusive).
func (g *Guard) Run(ctx context.Context, u string, fn func(ctx context.Context) error) error {
	t, err := g.Acquire(ctx, u, false)
	if err != nil {
		return err
	}
	stop := g.keep(ctx, t)
	ferr := fn(ctx)
	stop()
	outcome, class := api.OutcomeAnswered, ""
	if ferr != nil {
		outcome = api.OutcomeInconclusive
		if c := failure.Classify(ferr); c.HostLevel() {
			outcome, class = api.OutcomeFailed, c.String()
		}
	}
	// The report is sent even when ctx ended with fn: the guard must
	// hear of a timeout most of all.
	_, rerr := g.Report(context.WithoutCancel(ctx), t.Ticket, outcome, class)
	if ferr != nil {
		return ferr
	}
	return rerr
}

// keep renews t's lease every third of it until the returned stop is
// called; stop returns once the renewing goroutine has ended.
func (g *Guard) keep(ctx context.Context, t api.Ticket) (stop func()) {
	every := max(time.Duration(t.LeaseSeconds*float64(time.Second))/3, minKeep)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, err := g.Extend(ctx, t.Ticket)
			if errors.Is(err, ErrNotFound) || errors.Is(err, ErrBadRequest) {
				return // the ticket is gone: nothing left to keep
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}
