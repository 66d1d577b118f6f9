package transport_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/transport"
)

// wantOpen fails the test unless err is a fast-fail for endpoint.
func wantOpen(t *testing.T, err error, endpoint string) {
	t.Helper()
	if !errors.Is(err, guard.ErrOpen) {
		t.Fatalf("got %v, want a fast-fail (guard.ErrOpen)", err)
	}
	var open *guard.OpenError
	if !errors.As(err, &open) {
		t.Fatalf("%v does not wrap *guard.OpenError", err)
	}
	if open.Endpoint != endpoint {
		t.Errorf("OpenError.Endpoint = %q, want %q", open.Endpoint, endpoint)
	}
}

func TestTimeoutsTripAndThirdFailsFast(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.NeverAnswers())
	for i := range 2 {
		_, _, err := get(t, b.quickHeaders, t.Context(), h.URL()+"/feed")
		var netErr net.Error
		if !errors.As(err, &netErr) || !netErr.Timeout() {
			t.Fatalf("request %d: got %v, want a timeout", i, err)
		}
	}
	await(t, h, 2)
	_, _, err := get(t, b.quickHeaders, t.Context(), h.URL()+"/feed")
	wantOpen(t, err, h.URL())
	if got := h.Requests(); got != 2 {
		t.Errorf("host saw %d requests, want 2", got)
	}
	if got := b.dials.Load(); got != 2 {
		t.Errorf("%d dials, want 2", got)
	}
}

func TestClosedPortTrips(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.ClosedPort())
	for i := range 2 {
		if _, _, err := get(t, b.client, t.Context(), h.URL()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("request %d: got %v, want ECONNREFUSED", i, err)
		}
	}
	_, _, err := get(t, b.client, t.Context(), h.URL())
	wantOpen(t, err, h.URL())
	if got := b.dials.Load(); got != 2 {
		t.Errorf("%d dials, want 2: the fast-fail must not dial", got)
	}
}

func TestResetsNeverTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.Resets())
	for i := range 4 {
		if _, _, err := get(t, b.client, t.Context(), h.URL()); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("request %d: got %v, want ECONNRESET", i, err)
		}
	}
	if got := h.Requests(); got != 4 {
		t.Errorf("host saw %d requests, want 4", got)
	}
}

func TestAnyStatusIsAnAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.Status(http.StatusBadGateway))
	for i := range 5 {
		resp, body, err := get(t, b.client, t.Context(), h.URL())
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if resp.StatusCode != http.StatusBadGateway || string(body) != "Bad Gateway\n" {
			t.Fatalf("request %d: got %d %q", i, resp.StatusCode, body)
		}
	}
	if got := h.Requests(); got != 5 {
		t.Errorf("host saw %d requests, want 5", got)
	}
	if got := b.guard.State(h.URL()); got != guard.Closed {
		t.Errorf("state = %v, want closed", got)
	}
}

func TestAnswerClearsFailureStreak(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dead := fault(t, faulthost.ClosedPort())
	tr := transport.New(transport.Config{
		Guard: b.guard,
		// One origin, two behaviours: fail, answer, fail, then fail fast
		// only if the answer did not clear the first failure.
		Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == "/ok" {
				return &http.Response{StatusCode: http.StatusNotFound, Body: http.NoBody, Request: r}, nil
			}
			return b.base.RoundTrip(r)
		}),
	})
	c := &http.Client{Transport: tr}
	for i, path := range []string{"/x", "/ok", "/x", "/x"} {
		_, _, err := get(t, c, t.Context(), dead.URL()+path)
		if path == "/ok" && err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if path != "/ok" && !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("step %d: got %v, want ECONNREFUSED", i, err)
		}
	}
	if got := b.guard.State(dead.URL()); got != guard.Open {
		t.Errorf("state = %v, want open after two failures in a row", got)
	}
}

func TestFastFailDoesNoNetworkWork(t *testing.T) {
	t.Parallel()
	var dials atomic.Int64
	refuse := &http.Transport{
		// Refuses every dial without touching the network; the name is
		// never resolved, so a dial count of zero also means no DNS.
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		},
	}
	t.Cleanup(refuse.CloseIdleConnections)
	g := guard.New(guard.Config{})
	c := &http.Client{Transport: transport.New(transport.Config{Base: refuse, Guard: g})}
	const target = "http://portal.example.invalid:8080/player_api.php?password=hunter2"
	for range 2 {
		if _, _, err := get(t, c, t.Context(), target); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("got %v, want ECONNREFUSED", err)
		}
	}
	for range 3 {
		_, _, err := get(t, c, t.Context(), target)
		wantOpen(t, err, "http://portal.example.invalid:8080")
	}
	if got := dials.Load(); got != 2 {
		t.Errorf("%d dials, want 2", got)
	}
}

func TestFastFailErrorNamesOnlyTheOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.ClosedPort())
	u := "http://user:s3cret@" + h.Addr() + "/path/private?token=hunter2"
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for range 3 {
		// RoundTrip directly: http.Client adds its own URL to errors.
		_, last = b.tr.RoundTrip(req)
	}
	wantOpen(t, last, h.URL())
	for _, secret := range []string{"s3cret", "user", "private", "hunter2"} {
		if strings.Contains(last.Error(), secret) {
			t.Errorf("fast-fail message %q contains %q", last, secret)
		}
	}
}

func TestRedirectToDeadHostChargesDeadHop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dead := fault(t, faulthost.ClosedPort())
	front := fault(t, faulthost.Redirect(dead.URL()+"/moved"))
	for i := range 2 {
		if _, _, err := get(t, b.client, t.Context(), front.URL()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("request %d: got %v, want ECONNREFUSED from the second hop", i, err)
		}
	}
	_, _, err := get(t, b.client, t.Context(), front.URL())
	wantOpen(t, err, dead.URL())
	if got := front.Requests(); got != 3 {
		t.Errorf("redirecting host saw %d requests, want 3 (every time)", got)
	}
	if got := b.guard.State(front.URL()); got != guard.Closed {
		t.Errorf("redirecting endpoint is %v, want closed", got)
	}
	if got := b.guard.State(dead.URL()); got != guard.Open {
		t.Errorf("dead endpoint is %v, want open", got)
	}
	if got, want := b.dials.Load(), int64(front.Conns()+2); got != want {
		t.Errorf("%d dials, want %d: the redirecting host's connections and two to the dead one", got, want)
	}
}

func TestHalfOpenBurstSendsOneTrial(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.Gated(http.StatusOK))
	for range 2 {
		_, _, err := get(t, b.quickHeaders, t.Context(), h.URL())
		var netErr net.Error
		if !errors.As(err, &netErr) || !netErr.Timeout() {
			t.Fatalf("got %v, want a header timeout", err)
		}
	}
	if got := b.guard.State(h.URL()); got != guard.Open {
		t.Fatalf("state = %v, want open", got)
	}
	b.clock.Advance(openFor)

	// The trial must outlive the burst, so the burst goes through the
	// patient client.
	const burst = 20
	type result struct {
		code int
		err  error
	}
	results := make(chan result, burst)
	for range burst {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, h.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			resp, _, err := do(b.client, req)
			if err != nil {
				results <- result{err: err}
				return
			}
			results <- result{code: resp.StatusCode}
		}()
	}
	for i := range burst - 1 {
		r := receive(t, results)
		if !errors.Is(r.err, guard.ErrOpen) {
			t.Fatalf("result %d: got %+v, want a fast-fail while the trial is in flight", i, r)
		}
	}
	await(t, h, 3)
	if got := h.Requests(); got != 3 {
		t.Fatalf("host saw %d requests, want 3 (two timeouts, one trial)", got)
	}
	h.Release()
	if r := receive(t, results); r.err != nil || r.code != http.StatusOK {
		t.Fatalf("trial: got %+v, want 200", r)
	}
	if got := b.guard.State(h.URL()); got != guard.Closed {
		t.Errorf("state after the trial answered = %v, want closed", got)
	}
}

func TestExemptRequestsNeverTripAndAreNeverRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.ClosedPort())
	exempt := transport.Exempt(t.Context())
	for i := range 3 {
		if _, _, err := get(t, b.client, exempt, h.URL()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("exempt request %d: got %v, want ECONNREFUSED", i, err)
		}
	}
	if got := b.guard.State(h.URL()); got != guard.Closed {
		t.Fatalf("state after exempt failures = %v, want closed", got)
	}
	for range 2 {
		get(t, b.client, t.Context(), h.URL())
	}
	if got := b.guard.State(h.URL()); got != guard.Open {
		t.Fatalf("state after two ordinary failures = %v, want open", got)
	}
	dialsBefore := b.dials.Load()
	if _, _, err := get(t, b.client, exempt, h.URL()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("exempt request to an open endpoint: got %v, want it sent (ECONNREFUSED)", err)
	}
	if got := b.dials.Load() - dialsBefore; got != 1 {
		t.Errorf("exempt request to an open endpoint made %d dials, want 1", got)
	}
}

func TestCancelledRequestsNeverTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.NeverAnswers())
	for i := 1; i <= 3; i++ {
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() {
			_, _, err := do(b.client, req)
			errc <- err
		}()
		await(t, h, i)
		cancel()
		if err := receive(t, errc); !errors.Is(err, context.Canceled) {
			t.Fatalf("request %d: got %v, want context.Canceled", i, err)
		}
	}
	if got := b.guard.State(h.URL()); got != guard.Closed {
		t.Errorf("state = %v, want closed", got)
	}
}

func TestCancelledBeforeSendingTakesNoTrial(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.ClosedPort())
	for range 2 {
		get(t, b.client, t.Context(), h.URL())
	}
	b.clock.Advance(openFor)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := get(t, b.client, ctx, h.URL()); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// The trial slot is still free, so this request is sent.
	if _, _, err := get(t, b.client, t.Context(), h.URL()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want the trial to be sent (ECONNREFUSED)", err)
	}
}

func TestPanicInBaseReleasesTrial(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(clockStart)
	g := guard.New(guard.Config{OpenFor: openFor, Now: clk.Now})
	var calls atomic.Int64
	var panicking atomic.Bool
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		if panicking.Load() {
			panic("base exploded")
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	})
	tr := transport.New(transport.Config{Base: base, Guard: g})
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:9/", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		tr.RoundTrip(req)
	}
	if got := g.State(req.URL.String()); got != guard.Open {
		t.Fatalf("state = %v, want open", got)
	}
	clk.Advance(openFor)
	panicking.Store(true)
	func() {
		defer func() {
			if r := recover(); r != "base exploded" {
				t.Errorf("recovered %v, want the base's panic to propagate", r)
			}
		}()
		tr.RoundTrip(req)
	}()
	panicking.Store(false)
	before := calls.Load()
	if _, err := tr.RoundTrip(req); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after the panic: got %v, want a new trial to be sent", err)
	}
	if got := calls.Load() - before; got != 1 {
		t.Errorf("base called %d times after the panic, want 1", got)
	}
}

func TestCancelledTrialHeldUntilBaseReturns(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(clockStart)
	g := guard.New(guard.Config{OpenFor: openFor, Now: clk.Now})
	entered := make(chan struct{}, 1)
	unblock := make(chan struct{})
	var blocking atomic.Bool
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if blocking.Load() {
			// A base that is slow to notice cancellation.
			entered <- struct{}{}
			<-unblock
			return nil, r.Context().Err()
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	})
	tr := transport.New(transport.Config{Base: base, Guard: g})
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:9/", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		tr.RoundTrip(req)
	}
	clk.Advance(openFor)

	blocking.Store(true)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(req.WithContext(ctx))
		errc <- err
	}()
	receive(t, entered)
	cancel()
	// Cancelled but not returned: the trial still owns the slot.
	if _, err := tr.RoundTrip(req); !errors.Is(err, guard.ErrOpen) {
		t.Fatalf("while the cancelled trial is still in the base: got %v, want a fast-fail", err)
	}
	close(unblock)
	if err := receive(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("trial: got %v, want context.Canceled", err)
	}
	blocking.Store(false)
	if _, err := tr.RoundTrip(req); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after the trial returned: got %v, want a new trial to be sent", err)
	}
}

func TestResponseCarriesCallersRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.Status(http.StatusOK))
	type markerKey struct{}
	ctx := context.WithValue(t.Context(), markerKey{}, "marker")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/a?b=c", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Probe", "1")
	before := *req.URL
	resp, err := b.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request != req {
		t.Error("resp.Request is not the caller's request")
	}
	if req.Context() != ctx || *req.URL != before || len(req.Header) != 1 {
		t.Errorf("request was modified: ctx %v, URL %v, header %v", req.Context() == ctx, req.URL, req.Header)
	}
}

func TestNewRejectsNegativeTimeouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   transport.Config
		field string
	}{
		{transport.Config{HeaderTimeout: -1}, "header_timeout"},
		{transport.Config{IdleTimeout: -time.Second}, "idle_timeout"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			err := tc.cfg.Validate()
			var ie *transport.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, transport.ErrInvalid) ||
				!strings.HasPrefix(err.Error(), "transport: "+tc.field+": is negative") {
				t.Errorf("Validate = %v; want an *InputError for %s", err, tc.field)
			}
			defer func() {
				r, _ := recover().(error)
				if r == nil || r.Error() != err.Error() {
					t.Errorf("New panicked with %v; want Validate's error", r)
				}
			}()
			transport.New(tc.cfg)
		})
	}
	if err := (transport.Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

func TestBadURLIsAClearError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http"}, Header: http.Header{}}
	if _, err := b.tr.RoundTrip(req); err == nil {
		t.Fatal("a URL without a host was accepted")
	}
	if _, err := b.tr.RoundTrip(&http.Request{Method: http.MethodGet}); err == nil || !strings.Contains(err.Error(), "no URL") {
		t.Fatalf("got %v, want an error saying the request has no URL", err)
	}
}

// TestRedirectToDeadHopClearsFirstStreak gives the first endpoint one
// counted failure, then sends a request it answers with a redirect to a
// dead host: the redirect is an answer, so the first endpoint's streak is
// cleared, and its next failure starts a new streak instead of tripping.
func TestRedirectToDeadHopClearsFirstStreak(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dead := fault(t, faulthost.ClosedPort())
	front := fault(t, faulthost.Redirect(dead.URL()+"/moved"))
	failOnce := func() {
		t.Helper()
		tk, err := b.guard.Acquire(front.URL())
		if err != nil {
			t.Fatal(err)
		}
		tk.Failed(context.DeadlineExceeded)
	}
	failures := func(endpoint string) int {
		for _, st := range b.guard.Endpoints() {
			if st.Endpoint == endpoint {
				return st.Failures
			}
		}
		return 0
	}
	failOnce()
	if got := failures(front.URL()); got != 1 {
		t.Fatalf("front has %d failures before the redirect, want 1", got)
	}
	if _, _, err := get(t, b.client, t.Context(), front.URL()+"/feed"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want ECONNREFUSED from the dead hop", err)
	}
	if got := failures(front.URL()); got != 0 {
		t.Errorf("front has %d failures after answering with a redirect, want 0", got)
	}
	if got := failures(dead.URL()); got != 1 {
		t.Errorf("dead hop has %d failures, want 1", got)
	}
	failOnce()
	if got := b.guard.State(front.URL()); got != guard.Closed {
		t.Errorf("front is %v after one new failure; the old one must not count", got)
	}
}

// doneWatch is a context that says when Done is first asked for: the
// guard asks only once a request waits for the endpoint's trial.
type doneWatch struct {
	context.Context
	asked chan struct{}
	once  sync.Once
}

func (c *doneWatch) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}

func TestWaitForTheTrialEndsWithTheRequestsContext(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(clockStart)
	g := guard.New(guard.Config{OpenFor: openFor, Now: clock.Now, TrialWait: time.Hour})
	var dials atomic.Int64
	tr := transport.New(transport.Config{Base: countingBase(t, &dials), Guard: g, HeaderTimeout: patient, IdleTimeout: patient})
	h := fault(t, faulthost.Status(http.StatusOK))

	// Seen answering in 2s, so a caller may wait 10s for a trial; then
	// tripped, and half-open with a trial out that the test holds.
	tk, _ := g.Acquire(h.URL())
	tk.AnsweredAfter(2 * time.Second)
	for range 2 {
		tk, err := g.Acquire(h.URL())
		if err != nil {
			t.Fatal(err)
		}
		tk.Failed(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	clock.Advance(openFor)
	trial, err := g.Acquire(h.URL())
	if err != nil || !trial.Trial() {
		t.Fatalf("Acquire after the period = %v, %v; want the trial", trial, err)
	}
	defer trial.Release()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watch := &doneWatch{Context: ctx, asked: make(chan struct{})}
	req, err := http.NewRequestWithContext(watch, http.MethodGet, h.URL()+"/feed", nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() {
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	receive(t, watch.asked) // the request waits for the trial
	cancel()
	err = receive(t, errs)
	if !errors.Is(err, guard.ErrGaveUp) || !errors.Is(err, context.Canceled) {
		t.Fatalf("RoundTrip = %v, want an error matching guard.ErrGaveUp and context.Canceled", err)
	}
	if w := g.TrialWaits(); w.GaveUp != 1 {
		t.Errorf("TrialWaits = %+v, want one that gave up", w)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials, want none: the request was never sent", n)
	}
}
