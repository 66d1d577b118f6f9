package guard_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/clocktest"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newFakeClock() *clocktest.Clock { return clocktest.New(epoch) }

// Errors of each kind a ticket may report, built the way the standard
// library builds them.
var (
	errRefused  = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	errTimeout  = fmt.Errorf("get: %w", context.DeadlineExceeded)
	errNXDomain = &net.DNSError{Err: "no such host", Name: "a.test", IsNotFound: true}
	errCanceled = fmt.Errorf("get: %w", context.Canceled)
	errPeer     = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	errPolicy   = &failure.PolicyError{Reason: "private address"}
	errOther    = errors.New("ETIMEDOUT")
)

// bed is one guard under test with a fake clock, a kill switch the test
// holds, and a log of every transition.
type bed struct {
	t       *testing.T
	g       *guard.Guard
	clk     *clocktest.Clock // nil in a bubble, where time.Now is the fake clock
	start   time.Time        // time zero of the tables in a bubble
	off     atomic.Bool
	tickets map[string]*guard.Ticket
	bg      map[string]*bgAcquire // Acquires running on goroutines of their own

	mu          sync.Mutex
	transitions []string
	probes      []*probeCall  // every probe the guard started, in order
	quit        chan struct{} // closed by shutdown, to end stubborn probes
}

// bgAcquire is an Acquire on a goroutine of its own, for callers that
// may wait on a trial (Config.TrialWait). tk and err are set before done
// is closed.
type bgAcquire struct {
	done   chan struct{}
	cancel context.CancelFunc // of the context AcquireContext was given
	tk     *guard.Ticket
	err    error
}

// probeCall is one call of the fake Probe. It returns what the test sends
// on result, or, unless it is stubborn, the context's error once the guard
// cancels it. returned is guarded by the bed's mu.
type probeCall struct {
	endpoint string
	ctx      context.Context
	result   chan error
	returned bool
}

func setup(t *testing.T, cfg guard.Config) *bed {
	t.Helper()
	b := &bed{t: t, clk: newFakeClock(), tickets: map[string]*guard.Ticket{}, bg: map[string]*bgAcquire{}}
	cfg.Now = b.clk.Now
	if cfg.Disabled == nil {
		cfg.Disabled = b.off.Load
	}
	next := cfg.OnTransition
	cfg.OnTransition = func(endpoint string, from, to guard.State) {
		b.mu.Lock()
		b.transitions = append(b.transitions, fmt.Sprintf("%s %s->%s", endpoint, from, to))
		b.mu.Unlock()
		if next != nil {
			next(endpoint, from, to)
		}
	}
	b.g = guard.New(cfg)
	return b
}

// setupProbes is setup for tables about probes. It must run inside a
// synctest bubble: the guard keeps time.Now, which is the bubble's fake
// clock, so its probe timers fire exactly when the table's time reaches
// them. Its Probe is a fake the table settles with "probe" rows. Stubborn
// probes ignore cancellation, for rows about late reports; the table must
// settle them before it ends.
func setupProbes(t *testing.T, cfg guard.Config, stubborn bool) *bed {
	t.Helper()
	b := &bed{t: t, start: time.Now(), tickets: map[string]*guard.Ticket{}, bg: map[string]*bgAcquire{}, quit: make(chan struct{})}
	if cfg.Disabled == nil {
		cfg.Disabled = b.off.Load
	}
	cfg.OnTransition = func(endpoint string, from, to guard.State) {
		b.mu.Lock()
		b.transitions = append(b.transitions, fmt.Sprintf("%s %s->%s", endpoint, from, to))
		b.mu.Unlock()
	}
	cfg.Probe = func(ctx context.Context, endpoint string) error {
		c := &probeCall{endpoint: endpoint, ctx: ctx, result: make(chan error)}
		b.mu.Lock()
		b.probes = append(b.probes, c)
		b.mu.Unlock()
		defer func() {
			b.mu.Lock()
			c.returned = true
			b.mu.Unlock()
		}()
		done := ctx.Done()
		if stubborn {
			done = b.quit
		}
		select {
		case err := <-c.result:
			return err
		case <-done:
			return ctx.Err()
		}
	}
	b.g = guard.New(cfg)
	return b
}

// shutdown ends stubborn probes and closes the guard; defer it in every
// bubble, so that a failing table leaves no goroutine behind.
func (b *bed) shutdown() {
	// Callers still waiting on a trial return when it settles, or at the
	// latest when their wait runs out: in a bubble, the fake clock gets
	// there at once.
	if len(b.bg) > 0 {
		for _, tk := range b.tickets {
			tk.Release()
		}
		for _, a := range b.bg {
			<-a.done
			if a.cancel != nil {
				a.cancel()
			}
		}
	}
	close(b.quit)
	b.g.Close()
}

func (b *bed) log() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.transitions...)
}

// step is one row of a state-machine table. at is the fake time since the
// start of the table; rows run in order and at never decreases.
type step struct {
	at   time.Duration
	do   string // see bed.run
	tk   string // ticket name, for ticket operations
	url  string // default "http://a.test/"
	want string // see bed.run
}

const defaultURL = "http://a.test/"

// run executes rows. Operations and what want means for each:
//
//	acquire, exempt   "ok", "trial", or "open <RetryAfter>" (e.g. "open 30s", "open 0s"),
//	                  or a range "open <min>..<max>", both ends included
//	acquire-bg        starts Acquire(url) on a goroutine; tk names it. With
//	                  want "ctx", AcquireContext with a context cancel
//	                  ends; with a duration, one whose deadline is that
//	                  much later
//	cancel            cancels the context of the background Acquire tk
//	got               the Acquire tk started: want is "waiting" while it
//	                  has not returned, else as for acquire, or
//	                  alternatives "trial|open 0s", or "gave-up" for an
//	                  ErrGaveUp that wraps the context's error; it then
//	                  names the ticket
//	trials            want is how many returned background Acquires got the trial
//	trial-of          names tk the one trial ticket background Acquires returned
//	waits             want is TrialWaits, "<admitted> <refused> <gave up>"
//	answer, release   ticket operations; want is unused
//	answer-after      AnsweredAfter(want), want a duration
//	fail              want names the error: refused, timeout, nxdomain,
//	                  canceled, peer-reset, policy, other (default refused),
//	                  or timeout-after-<d>, a timeout owed for d (sent d ago),
//	                  or gave-up-after-<d>, a *WaitError owed for d
//	held              want is whether the guard holds a record for url
//	reset             Reset(url)
//	reset-all         ResetAll()
//	state             want is the State string
//	len               want is Len()
//	disable, enable   flip the kill switch
//	probes            want is how many probes have been started in all
//	probe             settles the oldest probe still running: want is
//	                  "answer" (Probe returns nil) or an error name as for fail
//	cancelled         want is whether the oldest running probe's context is done
//	close             Close the guard
//
// In a bubble every row first lets the guard's goroutines run until they
// block, so timers due by the row's time have fired and probes have
// reported.
func (b *bed) run(rows []step) {
	b.t.Helper()
	for i, r := range rows {
		if b.clk != nil {
			b.clk.Set(epoch.Add(r.at))
		} else {
			if d := time.Until(b.start.Add(r.at)); d > 0 {
				time.Sleep(d)
			}
			synctest.Wait()
		}
		url := r.url
		if url == "" {
			url = defaultURL
		}
		where := fmt.Sprintf("row %d (%v %s %s %s)", i, r.at, r.do, r.tk, url)
		switch r.do {
		case "acquire", "exempt":
			acquire := b.g.Acquire
			if r.do == "exempt" {
				acquire = b.g.AcquireExempt
			}
			tk, err := acquire(url)
			b.checkAcquire(where, tk, err, r.want)
			if tk != nil {
				b.tickets[r.tk] = tk
			}
		case "acquire-bg":
			a := &bgAcquire{done: make(chan struct{})}
			b.bg[r.tk] = a
			acquire := func() (*guard.Ticket, error) { return b.g.Acquire(url) }
			if r.want != "" {
				var ctx context.Context
				var cancel context.CancelFunc
				if r.want == "ctx" {
					ctx, cancel = context.WithCancel(context.Background())
				} else {
					d, err := time.ParseDuration(r.want)
					if err != nil {
						b.t.Fatalf("%s: %v", where, err)
					}
					ctx, cancel = context.WithTimeout(context.Background(), d)
				}
				a.cancel = cancel
				acquire = func() (*guard.Ticket, error) { return b.g.AcquireContext(ctx, url) }
			}
			go func() {
				defer close(a.done)
				a.tk, a.err = acquire()
			}()
		case "cancel":
			a, ok := b.bg[r.tk]
			if !ok || a.cancel == nil {
				b.t.Fatalf("%s: no background AcquireContext named %q", where, r.tk)
			}
			a.cancel()
		case "got":
			a, ok := b.bg[r.tk]
			if !ok {
				b.t.Fatalf("%s: no background Acquire named %q", where, r.tk)
			}
			select {
			case <-a.done:
			default:
				if r.want != "waiting" {
					b.t.Fatalf("%s: Acquire still waiting, want %s", where, r.want)
				}
				continue
			}
			if r.want == "waiting" {
				b.t.Fatalf("%s: Acquire returned (%v, %v), want it waiting", where, a.tk, a.err)
			}
			want := r.want
			for alt := range strings.SplitSeq(r.want, "|") {
				if acquireMatches(a.tk, a.err, alt) {
					want = alt
				}
			}
			b.checkAcquire(where, a.tk, a.err, want)
			if a.tk != nil {
				b.tickets[r.tk] = a.tk
			}
		case "trials":
			if got := fmt.Sprint(len(b.bgTrials())); got != r.want {
				b.t.Fatalf("%s: %s background Acquires got the trial, want %s", where, got, r.want)
			}
		case "waits":
			w := b.g.TrialWaits()
			if got := fmt.Sprintf("%d %d %d", w.Admitted, w.Refused, w.GaveUp); got != r.want {
				b.t.Fatalf("%s: TrialWaits = %s, want %s", where, got, r.want)
			}
		case "trial-of":
			found := b.bgTrials()
			if len(found) != 1 {
				b.t.Fatalf("%s: %d background Acquires got the trial, want 1", where, len(found))
			}
			b.tickets[r.tk] = found[0]
		case "answer":
			b.ticket(where, r.tk).Answered()
		case "answer-after":
			d, err := time.ParseDuration(r.want)
			if err != nil {
				b.t.Fatalf("%s: %v", where, err)
			}
			b.ticket(where, r.tk).AnsweredAfter(d)
		case "fail":
			b.ticket(where, r.tk).Failed(namedErr(b.t, r.want))
		case "release":
			b.ticket(where, r.tk).Release()
		case "reset":
			if err := b.g.Reset(url); err != nil {
				b.t.Fatalf("%s: Reset: %v", where, err)
			}
		case "reset-all":
			b.g.ResetAll()
		case "state":
			if got := b.g.State(url).String(); got != r.want {
				b.t.Fatalf("%s: State = %s, want %s", where, got, r.want)
			}
		case "held":
			key, _ := guard.Key(url)
			got := false
			for _, st := range b.g.Endpoints() {
				got = got || st.Endpoint == key
			}
			if fmt.Sprint(got) != r.want {
				b.t.Fatalf("%s: held = %v, want %s", where, got, r.want)
			}
		case "len":
			if got := fmt.Sprint(b.g.Len()); got != r.want {
				b.t.Fatalf("%s: Len = %s, want %s", where, got, r.want)
			}
		case "probes":
			b.mu.Lock()
			n := len(b.probes)
			b.mu.Unlock()
			if got := fmt.Sprint(n); got != r.want {
				b.t.Fatalf("%s: %s probes started, want %s", where, got, r.want)
			}
		case "probe":
			c := b.oldestProbe(where)
			var err error
			if r.want != "answer" {
				err = namedErr(b.t, r.want)
			}
			c.result <- err
			synctest.Wait()
		case "cancelled":
			c := b.oldestProbe(where)
			if got := fmt.Sprint(c.ctx.Err() != nil); got != r.want {
				b.t.Fatalf("%s: probe context cancelled = %s, want %s", where, got, r.want)
			}
		case "close":
			if err := b.g.Close(); err != nil {
				b.t.Fatalf("%s: Close: %v", where, err)
			}
		case "disable":
			b.off.Store(true)
		case "enable":
			b.off.Store(false)
		default:
			b.t.Fatalf("%s: unknown operation", where)
		}
	}
}

// bgTrials returns the trial tickets background Acquires have returned.
func (b *bed) bgTrials() []*guard.Ticket {
	var found []*guard.Ticket
	for _, a := range b.bg {
		select {
		case <-a.done:
			if a.err == nil && a.tk.Trial() {
				found = append(found, a.tk)
			}
		default:
		}
	}
	return found
}

// oldestProbe returns the first probe call the test has not settled.
func (b *bed) oldestProbe(where string) *probeCall {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.probes {
		if !c.returned {
			return c
		}
	}
	b.t.Fatalf("%s: no probe running", where)
	return nil
}

func (b *bed) ticket(where, name string) *guard.Ticket {
	tk, ok := b.tickets[name]
	if !ok {
		b.t.Fatalf("%s: no ticket named %q", where, name)
	}
	return tk
}

// acquireMatches reports whether an Acquire's result is want, exactly
// as checkAcquire names it.
func acquireMatches(tk *guard.Ticket, err error, want string) bool {
	var oe *guard.OpenError
	switch {
	case err == nil && tk.Trial():
		return want == "trial"
	case err == nil:
		return want == "ok" || want == ""
	case errors.As(err, &oe):
		return want == "open "+oe.RetryAfter.String()
	case errors.Is(err, guard.ErrGaveUp):
		return want == "gave-up"
	}
	return false
}

func (b *bed) checkAcquire(where string, tk *guard.Ticket, err error, want string) {
	b.t.Helper()
	var got string
	var oe *guard.OpenError
	switch {
	case err == nil && tk.Trial():
		got = "trial"
	case err == nil:
		got = "ok"
	case errors.As(err, &oe):
		if !errors.Is(err, guard.ErrOpen) {
			b.t.Fatalf("%s: *OpenError is not ErrOpen", where)
		}
		got = "open " + oe.RetryAfter.String()
	case errors.Is(err, guard.ErrGaveUp):
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			b.t.Fatalf("%s: %v does not wrap the context's error", where, err)
		}
		got = "gave-up"
	default:
		b.t.Fatalf("%s: Acquire: %v", where, err)
	}
	if want == "" {
		want = "ok"
	}
	if lo, hi, ok := strings.Cut(strings.TrimPrefix(want, "open "), ".."); ok && oe != nil {
		// A range, for open periods with a spread: "open 60s..66s".
		min, err1 := time.ParseDuration(lo)
		max, err2 := time.ParseDuration(hi)
		if err1 != nil || err2 != nil {
			b.t.Fatalf("%s: bad range %q", where, want)
		}
		if oe.RetryAfter < min || oe.RetryAfter > max {
			b.t.Fatalf("%s: Acquire gave %s, want %s", where, got, want)
		}
		return
	}
	if got != want {
		b.t.Fatalf("%s: Acquire gave %s, want %s", where, got, want)
	}
}

// owedTimeout is a timeout that says how long the endpoint owed its
// answer, as the transport's header timeout does.
type owedTimeout struct{ owed time.Duration }

func (e owedTimeout) Error() string                 { return "no response headers within " + e.owed.String() }
func (e owedTimeout) Timeout() bool                 { return true }
func (e owedTimeout) Unwrap() error                 { return context.DeadlineExceeded }
func (e owedTimeout) OwedFor() (owed time.Duration) { return e.owed }

func namedErr(t *testing.T, name string) error {
	if d, ok := strings.CutPrefix(name, "gave-up-after-"); ok {
		owed, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("error name %q: %v", name, err)
		}
		return &guard.WaitError{Owed: owed, Err: context.DeadlineExceeded}
	}
	if d, ok := strings.CutPrefix(name, "timeout-after-"); ok {
		owed, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("error name %q: %v", name, err)
		}
		return owedTimeout{owed}
	}
	switch name {
	case "", "refused":
		return errRefused
	case "timeout":
		return errTimeout
	case "nxdomain":
		return errNXDomain
	case "canceled":
		return errCanceled
	case "peer-reset":
		return errPeer
	case "policy":
		return errPolicy
	case "other":
		return errOther
	}
	t.Fatalf("unknown error name %q", name)
	return nil
}

// transitionsOf returns the log entries for the default endpoint without
// its name.
func transitionsOf(log []string) string {
	var out []string
	for _, l := range log {
		out = append(out, strings.TrimPrefix(l, "http://a.test "))
	}
	return strings.Join(out, ", ")
}
