package guard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
)

func TestTransitionsReportedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{})
	b.run([]step{
		{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
		{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
		{do: "state", want: "open"},
		{at: 30 * s, do: "state", want: "half-open"},
		{at: 30 * s, do: "state", want: "half-open"},
		{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
		{at: 30 * s, do: "acquire", want: "open 0s"},
		{at: 31 * s, do: "fail", tk: "t"},
		{at: 61 * s, do: "acquire", tk: "t2", want: "trial"},
		{at: 62 * s, do: "answer", tk: "t2"},
		{at: 63 * s, do: "reset"},
		{at: 64 * s, do: "acquire", tk: "c"}, {at: 64 * s, do: "fail", tk: "c"},
		{at: 64 * s, do: "acquire", tk: "d"}, {at: 64 * s, do: "fail", tk: "d"},
		{at: 65 * s, do: "reset"},
		{at: 66 * s, do: "acquire", tk: "e"}, {at: 66 * s, do: "fail", tk: "e"},
		{at: 66 * s, do: "acquire", tk: "f"}, {at: 66 * s, do: "fail", tk: "f"},
		// Nobody looks until well after the open period: the half-open
		// step is still reported, before the answer closes it.
		{at: 200 * s, do: "exempt", tk: "g"},
		{at: 201 * s, do: "answer", tk: "g"},
	})
	want := "closed->open, open->half-open, half-open->open, open->half-open, half-open->closed, " +
		"closed->open, open->closed, closed->open, open->half-open, half-open->closed"
	if got := transitionsOf(b.log()); got != want {
		t.Errorf("transitions:\n got %s\nwant %s", got, want)
	}
}

// TestTransitionsNeverGoBack reads the state with a clock that lags behind
// an earlier reading, as a goroutine that read the clock before another
// would: the half-open step, once reported, is not undone.
func TestTransitionsNeverGoBack(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{})
	b.run([]step{
		{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
		{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
		{at: 30 * s, do: "state", want: "half-open"},
	})
	b.clk.Set(epoch.Add(29 * s))
	b.g.State(defaultURL)
	b.g.Endpoints()
	if got, want := transitionsOf(b.log()), "closed->open, open->half-open"; got != want {
		t.Errorf("transitions: got %s, want %s", got, want)
	}
}

// TestTransitionCallbackHoldsNoLock calls back into the guard, on the same
// endpoint, from OnTransition; a callback made under the endpoint's lock
// would deadlock.
func TestTransitionCallbackHoldsNoLock(t *testing.T) {
	t.Parallel()
	var g *guard.Guard
	var seen []string
	b := setup(t, guard.Config{OnTransition: func(endpoint string, from, to guard.State) {
		seen = append(seen, fmt.Sprintf("%s now %s, %d records", to, g.State(endpoint), g.Len()))
		if tk, err := g.AcquireExempt(endpoint); err == nil {
			tk.Release()
		}
		_ = g.Endpoints()
	}})
	g = b.g
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.run([]step{
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 31 * s, do: "answer", tk: "t"},
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("OnTransition deadlocked: it was called with a lock held")
	}
	want := "open now open, 1 records|half-open now half-open, 1 records|closed now closed, 1 records"
	if got := strings.Join(seen, "|"); got != want {
		t.Errorf("callbacks saw %s, want %s", got, want)
	}
}

func TestOpenError(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{})
	const secretURL = "https://user:s3cret@Portal.Example:8443/player_api.php?password=t0ken"
	for range 2 {
		tk, err := b.g.Acquire(secretURL)
		if err != nil {
			t.Fatal(err)
		}
		tk.Failed(errRefused)
	}
	_, err := b.g.Acquire(secretURL)
	var oe *guard.OpenError
	if !errors.As(err, &oe) || !errors.Is(err, guard.ErrOpen) {
		t.Fatalf("Acquire on an open endpoint: %v; want an *OpenError that is ErrOpen", err)
	}
	if oe.Endpoint != "https://portal.example:8443" || oe.RetryAfter != 30*s {
		t.Errorf("OpenError = %+v", *oe)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "guard: ") || !strings.Contains(msg, "https://portal.example:8443") {
		t.Errorf("message %q does not name the endpoint", msg)
	}
	for _, bad := range []string{"s3cret", "user", "t0ken", "player_api", "password", "timeout", "timed out", "HTTP Error", "auth"} {
		if strings.Contains(msg, bad) {
			t.Errorf("message %q contains %q", msg, bad)
		}
	}
}

// TestFastFailOnTheDefaultClock refuses on an open endpoint with the
// default clock, whose lock-free fast-fail reads only the monotonic clock:
// RetryAfter is the time left of the period, never more, and the demand a
// probe needs is noted on the first refusal (the locked path) and then
// read without the lock.
func TestFastFailOnTheDefaultClock(t *testing.T) {
	t.Parallel()
	const openFor = time.Hour
	g := guard.New(guard.Config{OpenFor: openFor, Probe: func(context.Context, string) error { return nil }, Disabled: func() bool { return false }})
	t.Cleanup(func() { _ = g.Close() })
	before := time.Now()
	for range 2 {
		tk, err := g.Acquire("http://a.test/")
		if err != nil {
			t.Fatal(err)
		}
		tk.Failed(errRefused)
	}
	tripped := time.Now()
	// A measurable part of the period passes on the real clock before the
	// refusals, so that a RetryAfter counted from anything later than the
	// trip shows.
	time.Sleep(5 * time.Millisecond)
	for i := range 3 {
		asked := time.Now()
		_, err := g.Acquire("http://a.test/")
		answered := time.Now()
		var oe *guard.OpenError
		if !errors.As(err, &oe) {
			t.Fatalf("refusal %d: Acquire = %v, want an *OpenError", i, err)
		}
		// The trip came between before and tripped, the refusal's
		// reading between asked and answered; RetryAfter is rounded up
		// to a whole millisecond.
		least, most := openFor-answered.Sub(before), openFor-asked.Sub(tripped)+time.Millisecond
		if oe.RetryAfter < least || oe.RetryAfter > most {
			t.Errorf("refusal %d: RetryAfter = %v, want within [%v, %v]", i, oe.RetryAfter, least, most)
		}
	}
}

func TestBadURL(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{})
	for _, raw := range []string{"", "portal.example/path", "http://user:pw@/x?token=1"} {
		if tk, err := b.g.Acquire(raw); err == nil || !errors.Is(err, guard.ErrBadURL) || tk != nil {
			t.Errorf("Acquire(%q) = %v, %v; want nil and an ErrBadURL", raw, tk, err)
		}
		if _, err := b.g.AcquireExempt(raw); !errors.Is(err, guard.ErrBadURL) {
			t.Errorf("AcquireExempt(%q) = %v; want ErrBadURL", raw, err)
		}
		if err := b.g.Reset(raw); !errors.Is(err, guard.ErrBadURL) {
			t.Errorf("Reset(%q) = %v; want ErrBadURL", raw, err)
		}
		if st := b.g.State(raw); st != guard.Closed {
			t.Errorf("State(%q) = %v; want closed", raw, st)
		}
	}
	if n := b.g.Len(); n != 0 {
		t.Errorf("bad URLs created %d records", n)
	}
}

func TestDisabledAcquireCreatesNoState(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{})
	b.off.Store(true)
	tk, err := b.g.Acquire("http://a.test/x")
	if err != nil {
		t.Fatal(err)
	}
	if tk.Endpoint() != "http://a.test" || tk.Trial() {
		t.Errorf("disabled ticket: endpoint %q, trial %v", tk.Endpoint(), tk.Trial())
	}
	tk.Failed(errTimeout)
	tk.Answered()
	tk.Release()
	if _, err := b.g.AcquireExempt("http://b.test/"); err != nil {
		t.Fatal(err)
	}
	if n := b.g.Len(); n != 0 {
		t.Errorf("disabled guard holds %d records", n)
	}
}

// TestKillSwitchEnvironment exercises the default kill switch; it cannot
// run in parallel because it sets the process environment.
func TestKillSwitchEnvironment(t *testing.T) {
	clk := newFakeClock()
	trip := func(g *guard.Guard) {
		tk, err := g.Acquire("http://a.test/")
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		tk.Failed(errRefused)
	}
	t.Setenv(guard.DisableEnv, "")
	g := guard.New(guard.Config{Now: clk.Now, Threshold: 1})
	trip(g)
	for _, tc := range []struct {
		value    string
		disabled bool
	}{{"1", true}, {"true", true}, {"TRUE", true}, {"True", true}, {"0", false}, {"false", false}, {"yes", false}, {"", false}} {
		// The default switch reads the variable on every call (the
		// design's rule): an operator sets it with no restart.
		t.Setenv(guard.DisableEnv, tc.value)
		_, err := g.Acquire("http://a.test/")
		if got := err == nil; got != tc.disabled {
			t.Errorf("%s=%q set after New: Acquire let the request through = %v, want %v", guard.DisableEnv, tc.value, got, tc.disabled)
		}
		if got := guard.DisabledByEnv(); got != tc.disabled {
			t.Errorf("%s=%q: DisabledByEnv = %v, want %v", guard.DisableEnv, tc.value, got, tc.disabled)
		}
	}
}

func TestNilAndUntrackedTickets(t *testing.T) {
	t.Parallel()
	var tk *guard.Ticket
	tk.Answered()
	tk.Failed(errRefused)
	tk.Release()
	if tk.Trial() || tk.Endpoint() != "" {
		t.Error("nil ticket reports a trial or an endpoint")
	}
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{})
	b.run([]step{
		{do: "acquire", url: "http://b.test/", tk: "b1"},
		{do: "acquire", tk: "a"}, {do: "fail", tk: "a", want: "timeout"},
		{at: 1 * s, do: "acquire", tk: "b"}, {at: 1 * s, do: "fail", tk: "b", want: "nxdomain"},
		{at: 11 * s, do: "reset", url: "http://c.test/"},
	})
	got := b.g.Endpoints()
	want := []guard.EndpointStatus{
		{Endpoint: "http://a.test", State: guard.Open, Failures: 2, OpenedAt: epoch.Add(s), OpenUntil: epoch.Add(31 * s), RetryAfter: 20 * s,
			LastFailure: failure.DNSNotFound, LastFailureAt: epoch.Add(1 * s), Openings: 1},
		{Endpoint: "http://b.test", State: guard.Closed, TicketsOut: 1},
		{Endpoint: "http://c.test", State: guard.Closed, Epoch: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Endpoints:\n got %+v\nwant %+v", got, want)
	}
	b.clk.Set(epoch.Add(31 * s))
	tk, err := b.g.Acquire("http://a.test/")
	if err != nil || !tk.Trial() {
		t.Fatalf("Acquire after the open period: %v, %v", tk, err)
	}
	st := b.g.Endpoints()[0]
	if st.State != guard.HalfOpen || !st.TrialOut || st.TicketsOut != 1 || st.RetryAfter != 0 {
		t.Errorf("half-open status %+v", st)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   guard.Config
		field string
	}{
		{guard.Config{Threshold: -1}, "threshold"},
		{guard.Config{Window: -time.Second}, "window"},
		{guard.Config{OpenFor: -1}, "open_for"},
		{guard.Config{MaxEndpoints: -5}, "max_endpoints"},
		{guard.Config{IdleTTL: -time.Minute}, "idle_ttl"},
	} {
		err := tc.cfg.Validate()
		var ie *guard.InputError
		if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, guard.ErrInvalid) ||
			!strings.HasPrefix(err.Error(), "guard: "+tc.field+": ") {
			t.Errorf("Validate(%+v) = %v; want an *InputError for %s", tc.cfg, err, tc.field)
		}
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("New accepted a bad %s", tc.field)
				}
			}()
			guard.New(tc.cfg)
		}()
	}
	if err := (guard.Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

func TestInputErrorMessage(t *testing.T) {
	t.Parallel()
	if got := (&guard.InputError{Field: "open_for", Reason: "is -1s"}).Error(); got != "guard: open_for: is -1s" {
		t.Errorf("with a field: %q", got)
	}
	if got := (&guard.InputError{Reason: "nothing to do"}).Error(); got != "guard: nothing to do" {
		t.Errorf("without a field: %q", got)
	}
}

// TestHalfOpenRace lets 64 goroutines race for the one trial slot, several
// rounds over; exactly one may win each round.
func TestHalfOpenRace(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{Threshold: 1})
	const racers, rounds = 64, 20
	for round := range rounds {
		halfOpenRound(t, b, round, 0)
		start := make(chan struct{})
		tickets := make(chan *guard.Ticket, racers)
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				<-start
				tk, err := b.g.Acquire(defaultURL)
				var oe *guard.OpenError
				switch {
				case err == nil:
					tickets <- tk
				case !errors.As(err, &oe) || oe.RetryAfter != 0:
					t.Errorf("loser got %v; want an *OpenError with RetryAfter 0", err)
				}
			})
		}
		close(start)
		wg.Wait()
		close(tickets)
		won := 0
		for tk := range tickets {
			won++
			if !tk.Trial() {
				t.Errorf("round %d: a non-trial ticket was admitted while half-open", round)
			}
			tk.Release()
		}
		if won != 1 {
			t.Fatalf("round %d: %d goroutines got the trial, want exactly 1", round, won)
		}
	}
}

// halfOpenRound resets the default endpoint at the round's minute, with
// an answer after need first unless need is 0, trips it with one failure
// (Threshold 1) and sets the clock to the end of its open period.
func halfOpenRound(t *testing.T, b *bed, round int, need time.Duration) {
	t.Helper()
	now := epoch.Add(time.Duration(round) * time.Minute)
	b.clk.Set(now)
	if err := b.g.Reset(defaultURL); err != nil {
		t.Fatal(err)
	}
	if need > 0 {
		up, err := b.g.Acquire(defaultURL)
		if err != nil {
			t.Fatal(err)
		}
		up.AnsweredAfter(need)
	}
	tk, err := b.g.Acquire(defaultURL)
	if err != nil {
		t.Fatal(err)
	}
	tk.Failed(errTimeout)
	b.clk.Set(now.Add(30 * s))
}

// TestConcurrentUse mixes every operation on a few endpoints from many
// goroutines, for the race detector and the invariants that must hold at
// the end: the record cap, and no ticket or trial slot left behind.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{MaxEndpoints: 6, Threshold: 2, OpenFor: time.Millisecond})
	urls := []string{"http://a.test/", "https://a.test/", "http://b.test:8080/", "http://c.test/", "http://d.test/", "http://e.test/", "http://f.test/", "http://g.test/"}
	errs := []error{errRefused, errTimeout, errCanceled, errPeer, nil}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				u := urls[(w+i)%len(urls)]
				switch i % 97 {
				case 0:
					b.g.Reset(u)
					continue
				case 1:
					b.g.Prune()
					continue
				case 2:
					b.g.Endpoints()
					continue
				case 3:
					b.clk.Advance(time.Millisecond)
				case 4:
					b.g.ResetAll()
					continue
				}
				acquire := b.g.Acquire
				if i%13 == 0 {
					acquire = b.g.AcquireExempt
				}
				tk, err := acquire(u)
				if err != nil {
					if !errors.Is(err, guard.ErrOpen) {
						t.Errorf("Acquire: %v", err)
					}
					continue
				}
				if e := errs[(w*7+i)%len(errs)]; e != nil {
					tk.Failed(e)
				} else {
					tk.Answered()
				}
				tk.Release()
				if n := b.g.Len(); n > 6 {
					t.Errorf("Len = %d above MaxEndpoints", n)
				}
			}
		})
	}
	wg.Wait()
	for _, st := range b.g.Endpoints() {
		if st.TicketsOut != 0 || st.TrialOut {
			t.Errorf("%s: %d tickets out, trial out %v, after every ticket settled", st.Endpoint, st.TicketsOut, st.TrialOut)
		}
	}
}
