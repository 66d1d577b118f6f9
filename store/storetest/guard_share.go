package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/waitfor"
)

// shareT0 is a fixed instant for the sharing cases.
var shareT0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// shareWait bounds how long a case waits for a notification to arrive.
const shareWait = 10 * time.Second

// linkOn opens a Link on a new handle of h's database, named node, with
// leases timed by clk, and starts it delivering into a channel.
func linkOn(t *testing.T, h *Harness, node string, clk *clocktest.Clock) (guard.Link, chan guard.Transition) {
	t.Helper()
	ss, ok := h.Open(t).(guard.ShareStore)
	if !ok {
		t.Skipf("%s does not share guard transitions", h.Engine)
	}
	l, err := ss.GuardShare(guard.StoreShareParams{Node: node, LeaseFor: 10 * time.Second, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	got := make(chan guard.Transition, 16)
	if err := l.Start(ctx(t), func(tr guard.Transition) { got <- tr }); err != nil {
		t.Fatalf("start %s: %v", node, err)
	}
	return l, got
}

// linkThrough is linkOn on a handle whose connections run through a
// Partition, which it returns; the case skips on engines without one.
func linkThrough(t *testing.T, h *Harness, node string, clk *clocktest.Clock) (guard.Link, chan guard.Transition, *Partition) {
	t.Helper()
	if h.OpenPartitioned == nil {
		t.Skipf("%s has no network to cut", h.Engine)
	}
	st, p := h.OpenPartitioned(t)
	ss, ok := st.(guard.ShareStore)
	if !ok {
		t.Skipf("%s does not share guard transitions", h.Engine)
	}
	l, err := ss.GuardShare(guard.StoreShareParams{Node: node, LeaseFor: 10 * time.Second, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	got := make(chan guard.Transition, 16)
	if err := l.Start(ctx(t), func(tr guard.Transition) { got <- tr }); err != nil {
		t.Fatalf("start %s: %v", node, err)
	}
	return l, got, p
}

// receive returns the next transition delivered on got.
func receive(t *testing.T, got chan guard.Transition, what string) guard.Transition {
	t.Helper()
	select {
	case tr := <-got:
		return tr
	case <-time.After(shareWait):
		t.Fatalf("%s: nothing delivered within %v", what, shareWait)
	}
	return guard.Transition{}
}

// quiet checks that nothing more was delivered on got by the time a
// marker publication from another node arrives after it.
func quiet(t *testing.T, from guard.Link, got chan guard.Transition, what string) {
	t.Helper()
	from.Publish(guard.Transition{Endpoint: "http://marker.test", Change: guard.ChangeReset, At: shareT0})
	if tr := receive(t, got, what); tr.Endpoint != "http://marker.test" {
		t.Fatalf("%s: delivered %+v before the marker", what, tr)
	}
}

// twoLinks opens links "a" and "b" on a new database, leases timed by
// the clock it returns.
func twoLinks(t *testing.T, newHarness NewFunc) (*Harness, *clocktest.Clock, guard.Link, guard.Link, chan guard.Transition) {
	t.Helper()
	h := newHarness(t)
	clk := clocktest.New(shareT0)
	a, _ := linkOn(t, h, "a", clk)
	b, gotB := linkOn(t, h, "b", clk)
	return h, clk, a, b, gotB
}

func testGuardShare(t *testing.T, newHarness NewFunc) {
	const ep = "http://dead.test"
	opened := guard.Transition{Endpoint: ep, Change: guard.ChangeOpened, At: shareT0,
		Since: shareT0.Add(-time.Minute), Until: shareT0.Add(30 * time.Second)}

	t.Run("openings reach the other nodes and a node that starts later", func(t *testing.T) {
		h := newHarness(t)
		clk := clocktest.New(shareT0)
		a, gotA := linkOn(t, h, "a", clk)
		_, gotB := linkOn(t, h, "b", clk)
		a.Publish(opened)
		if tr := receive(t, gotB, "b"); tr != opened {
			t.Fatalf("b got %+v, want %+v", tr, opened)
		}
		_, gotC := linkOn(t, h, "c", clk)
		if tr := receive(t, gotC, "c's load"); tr.Endpoint != ep || !tr.Until.Equal(opened.Until) || !tr.Since.Equal(opened.Since) {
			t.Fatalf("c loaded %+v, want %+v", tr, opened)
		}
		// A node never hears its own publications.
		quiet(t, a, gotB, "b")
		select {
		case tr := <-gotA:
			t.Fatalf("a heard its own publication %+v", tr)
		default:
		}
	})

	t.Run("an answer removes the opening everywhere", func(t *testing.T) {
		h, clk, a, b, gotB := twoLinks(t, newHarness)
		a.Publish(opened)
		receive(t, gotB, "opening")
		a.Publish(guard.Transition{Endpoint: ep, Change: guard.ChangeAnswered, At: shareT0.Add(time.Second)})
		if tr := receive(t, gotB, "answer"); tr.Change != guard.ChangeAnswered || tr.Endpoint != ep {
			t.Fatalf("b got %+v, want the answer", tr)
		}
		_, gotC := linkOn(t, h, "c", clk)
		quiet(t, b, gotC, "c after the answer")
	})

	t.Run("reset-all clears every opening", func(t *testing.T) {
		h, clk, a, b, gotB := twoLinks(t, newHarness)
		a.Publish(opened)
		other := opened
		other.Endpoint = "http://other.test"
		a.Publish(other)
		receive(t, gotB, "opening")
		receive(t, gotB, "opening")
		b.Publish(guard.Transition{Change: guard.ChangeResetAll, At: shareT0})
		_, gotC := linkOn(t, h, "c", clk)
		quiet(t, a, gotC, "c after reset-all")
	})

	t.Run("expired openings are not loaded", func(t *testing.T) {
		h, clk, a, b, gotB := twoLinks(t, newHarness)
		a.Publish(opened)
		receive(t, gotB, "opening")
		clk.Set(opened.Until)
		_, gotC := linkOn(t, h, "c", clk)
		quiet(t, b, gotC, "c after the until")
	})

	t.Run("one lease per open period; it expires for another node", func(t *testing.T) {
		_, clk, a, b, _ := twoLinks(t, newHarness)
		p := guard.ClaimParams{Endpoint: ep, Until: opened.Until}
		claim := func(l guard.Link, who string, held bool) guard.Lease {
			t.Helper()
			lease, err := l.Claim(ctx(t), p)
			if err != nil {
				t.Fatal(err)
			}
			if lease.Held != held {
				t.Fatalf("%s: Held = %v, want %v", who, lease.Held, held)
			}
			return lease
		}
		first := claim(a, "a", true)
		if want := shareT0.Add(10 * time.Second); !first.Expires.Equal(want) {
			t.Fatalf("lease expires %v, want %v", first.Expires, want)
		}
		if got := claim(b, "b", false); !got.Expires.Equal(first.Expires) {
			t.Fatalf("b sees expiry %v, want a's %v", got.Expires, first.Expires)
		}
		claim(a, "a again", true)
		clk.Advance(10 * time.Second)
		claim(b, "b after expiry", true)
		claim(a, "a after b took over", false)
		// A later open period is a new lease, whoever held the last.
		p.Until = p.Until.Add(time.Minute)
		claim(a, "a for the next period", true)
		// The holder's re-opening releases it.
		a.Publish(guard.Transition{Endpoint: ep, Change: guard.ChangeOpened, At: shareT0, Since: shareT0, Until: p.Until.Add(time.Minute)})
		waitLeaseFree(t, b, p)
	})

	t.Run("schemas do not hear each other", func(t *testing.T) {
		clk := clocktest.New(shareT0)
		a, _ := linkOn(t, newHarness(t), "a", clk)
		h2 := newHarness(t)
		b, _ := linkOn(t, h2, "b", clk)
		_, gotC := linkOn(t, h2, "c", clk)
		a.Publish(opened)
		quiet(t, b, gotC, "another schema")
	})

	t.Run("a node cut off from the database", func(t *testing.T) {
		// p loses every connection to the database while it holds the
		// lease on x's trial. Meanwhile the lease expires and o takes it
		// over, x closes on o's answer and y opens; p's own opening of z
		// cannot be written. Healed, p's listener reconnects and reloads:
		// y as an opening, and x as closed, although the notification of
		// its close went to a connection that was gone. z stays p's
		// alone: the other nodes learn of that host from their own
		// evidence, as without sharing.
		h := newHarness(t)
		clk := clocktest.New(shareT0)
		o, gotO := linkOn(t, h, "o", clk)
		p, gotP, cut := linkThrough(t, h, "p", clk)
		x, y, z := opened, opened, opened
		x.Endpoint, y.Endpoint, z.Endpoint = "http://x.test", "http://y.test", "http://z.test"
		y.Until = shareT0.Add(time.Minute)
		o.Publish(x)
		if tr := receive(t, gotP, "p, x's opening"); tr != x {
			t.Fatalf("p got %+v, want %+v", tr, x)
		}
		trial := guard.ClaimParams{Endpoint: x.Endpoint, Until: x.Until}
		if lease, err := p.Claim(ctx(t), trial); err != nil || !lease.Held {
			t.Fatalf("p's claim before the cut: %+v, %v; want held", lease, err)
		}

		cut.Cut()
		if _, err := p.Claim(ctx(t), trial); err == nil {
			t.Fatal("p's claim while cut off succeeded; want an error (the guard then runs the trial itself)")
		}
		p.Publish(z)
		if lease, err := o.Claim(ctx(t), trial); err != nil || lease.Held {
			t.Fatalf("o's claim while p's lease runs: %+v, %v; want p's", lease, err)
		}
		clk.Advance(10 * time.Second)
		if lease, err := o.Claim(ctx(t), trial); err != nil || !lease.Held {
			t.Fatalf("o's claim after p's lease expired: %+v, %v; want held (takeover)", lease, err)
		}
		o.Publish(guard.Transition{Endpoint: x.Endpoint, Change: guard.ChangeAnswered, At: clk.Now()})
		o.Publish(y)
		// o's writes are in the table once a marker from o's writer
		// has come back to o's own reader: a third node hears it.
		_, gotW := linkOn(t, h, "w", clk)
		if tr := receive(t, gotW, "w's load"); tr.Endpoint != y.Endpoint {
			t.Fatalf("w loaded %+v, want y's opening only", tr)
		}

		cut.Heal()
		got := map[string]guard.Transition{}
		for range 2 {
			tr := receive(t, gotP, "p after the partition")
			got[tr.Endpoint] = tr
		}
		if tr := got[y.Endpoint]; tr.Change != y.Change || !tr.Until.Equal(y.Until) || !tr.Since.Equal(y.Since) {
			t.Errorf("p reloaded y as %+v, want %+v", tr, y)
		}
		if tr := got[x.Endpoint]; tr.Change != guard.ChangeAnswered {
			t.Errorf("p learned of x %+v after the partition, want it answered", tr)
		}
		// z was never written: o hears p's next publication and not z.
		quiet(t, p, gotO, "o after p's partition")
		if lease, err := p.Claim(ctx(t), guard.ClaimParams{Endpoint: y.Endpoint, Until: y.Until}); err != nil || !lease.Held {
			t.Fatalf("p's claim after the partition: %+v, %v; want held (its pool reconnected)", lease, err)
		}
	})

	t.Run("guards on two nodes", func(t *testing.T) {
		h := newHarness(t)
		clk := clocktest.New(shareT0)
		la, _ := linkOn(t, h, "a", clk)
		ss := h.Open(t).(guard.ShareStore)
		lb, err := ss.GuardShare(guard.StoreShareParams{Node: "b", LeaseFor: 10 * time.Second, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer lb.Close()
		never := func() bool { return false }
		ga := guard.New(guard.Config{Now: clk.Now, Disabled: never, Share: la})
		defer ga.Close()
		trips := make(chan guard.State, 4)
		gb := guard.New(guard.Config{Now: clk.Now, Disabled: never, Share: lb,
			OnTransition: func(_ string, _, to guard.State) { trips <- to }})
		defer gb.Close()
		if err := lb.Start(ctx(t), gb.Apply); err != nil {
			t.Fatal(err)
		}
		// a's network works: another endpoint answered.
		tk, _ := ga.Acquire("http://up.test/")
		tk.Answered()
		clk.Advance(time.Second) // past the coarse clock's step
		for range 2 {
			tk, err := ga.Acquire(ep + "/")
			if err != nil {
				t.Fatal(err)
			}
			tk.Failed(context.DeadlineExceeded)
			clk.Advance(time.Second)
		}
		select {
		case st := <-trips:
			if st != guard.Open {
				t.Fatalf("b went %v, want open", st)
			}
		case <-time.After(shareWait):
			t.Fatal("b did not adopt a's opening")
		}
		_, err = gb.Acquire(ep + "/")
		var oe *guard.OpenError
		if !errors.As(err, &oe) || oe.RetryAfter <= 0 {
			t.Fatalf("b's Acquire: %v, want a fast-fail", err)
		}
	})
}

// waitLeaseFree claims p through l until it is held, as the release
// travels through the writer.
func waitLeaseFree(t *testing.T, l guard.Link, p guard.ClaimParams) {
	t.Helper()
	var err error
	if !waitfor.Until(shareWait, func() bool {
		var lease guard.Lease
		lease, err = l.Claim(ctx(t), p)
		return err != nil || lease.Held
	}) || err != nil {
		t.Fatalf("the lease was not released: %v", err)
	}
}
