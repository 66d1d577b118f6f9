package guard

import (
	"context"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// gatedClaimer holds every claim until the test sends its lease.
type gatedClaimer struct{ lease chan Lease }

func (gatedClaimer) Publish(Transition) {}

func (c gatedClaimer) Claim(ctx context.Context, _ ClaimParams) (Lease, error) {
	select {
	case l := <-c.lease:
		return l, nil
	case <-ctx.Done():
		return Lease{}, ctx.Err()
	}
}

// TestLeaseHandedToTheTrialWakesNoWaiter: while a guard claims the
// cluster's lease, its first caller waits for it and a second caller
// waits for the trial (TrialWait). When the lease is held here it goes to
// the first caller as its trial without the slot being freed in between,
// so the second caller is not woken until that trial settles.
func TestLeaseHandedToTheTrialWakesNoWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		claims := gatedClaimer{lease: make(chan Lease)}
		g := New(Config{Share: claims, TrialWait: time.Minute, MaxProbes: -1, Disabled: func() bool { return false }})
		defer g.Close()
		const u = "http://a.test/"
		tk, _ := g.Acquire(u)
		tk.AnsweredAfter(2 * time.Second)
		for range 2 {
			tk, _ := g.Acquire(u)
			tk.Failed(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
		}
		time.Sleep(DefaultOpenFor)

		type result struct {
			tk  *Ticket
			err error
		}
		first, second := make(chan result, 1), make(chan result, 1)
		go func() { tk, err := g.Acquire(u); first <- result{tk, err} }()
		synctest.Wait() // the first caller waits for the lease
		go func() { tk, err := g.Acquire(u); second <- result{tk, err} }()
		synctest.Wait() // the second waits for the trial

		ep := g.records.Load().get("http://a.test")
		ep.mu.Lock()
		settled := ep.settled
		ep.mu.Unlock()
		if settled == nil {
			t.Fatal("nobody waits for the trial")
		}
		claims.lease <- Lease{Held: true}
		synctest.Wait()
		r := <-first
		if r.err != nil || !r.tk.Trial() {
			t.Fatalf("first caller: %v, %v; want the trial", r.tk, r.err)
		}
		select {
		case <-settled:
			t.Fatal("handing the lease to the trial woke the callers waiting for it")
		default:
		}
		r.tk.Answered()
		synctest.Wait()
		if r := <-second; r.err != nil {
			t.Fatalf("second caller after the trial answered: %v; want it admitted", r.err)
		}
	})
}
