package server

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/sqlitetest"
	"github.com/hostguard/hostguard/internal/waitfor"
)

// waitRefused waits until the API no longer accepts connections, which is
// the first step of a shutdown.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	waitfor.True(t, 5*time.Second, "the listener still accepts connections after shutdown began", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
}

func TestShutdownFinishesInFlightFetch(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.HeaderTimeout = 10 * time.Second })
	gate := faulthost.Gated(200)
	t.Cleanup(gate.Close)
	type result struct {
		status int
		err    error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := testClient(t).Get(f.api + fetchPath(gate.URL()+"/"))
		if err != nil {
			got <- result{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got <- result{status: resp.StatusCode}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := gate.Await(ctx, 1); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.stop() }()
	waitRefused(t, strings.TrimPrefix(f.api, "http://"))
	select {
	case <-stopped:
		t.Fatal("Serve returned while a request was in flight")
	default:
	}
	gate.Release()
	if r := <-got; r.err != nil || r.status != 200 {
		t.Fatalf("in-flight fetch during shutdown: %+v", r)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if ep := f.endpoint(t, gate.URL()); ep.TicketsOut != 0 {
		t.Fatalf("tickets out after shutdown: %+v", ep)
	}
}

func TestShutdownCutsWhatOutlivesTheDrainAndReleasesTickets(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) {
		c.HeaderTimeout = 30 * time.Second
		c.ShutdownTimeout = 200 * time.Millisecond
	})
	silent := faulthost.NeverAnswers()
	t.Cleanup(silent.Close)
	tls := faulthost.NeverAnswers()
	t.Cleanup(tls.Close)

	// A remote ticket that will never be reported.
	remote := f.do("POST", "/v1/guard/acquire", map[string]any{"url": "http://remote.example"})
	if remote.status != 200 {
		t.Fatal(remote.status)
	}
	// A fetch whose upstream never answers.
	fetchDone := make(chan error, 1)
	go func() {
		resp, err := testClient(t).Get(f.api + fetchPath(silent.URL()+"/"))
		if err == nil {
			resp.Body.Close()
		}
		fetchDone <- err
	}()
	// A tunnel that stays open.
	resp, conn, br := f.rawConnect(t, tls.Addr())
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := silent.Await(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	<-fetchDone
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("the tunnel survived shutdown: %v", err)
	}
	for _, ep := range f.s.guard.Endpoints() {
		if ep.TicketsOut != 0 {
			t.Errorf("%s still has %d tickets out after shutdown", ep.Endpoint, ep.TicketsOut)
		}
	}
	if n := f.s.tickets.len(); n != 0 {
		t.Errorf("%d remote tickets left after shutdown", n)
	}
	if n := f.s.tunnels.len(); n != 0 {
		t.Errorf("%d tunnels left after shutdown", n)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestServeReturnsListenerError: a listener that fails stops Serve with its
// error, after the same clean shutdown.
func TestServeReturnsListenerError(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Logger: discardLogger(), SweepEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	ln.Close()
	if err := s.Serve(context.Background(), ln, nil); err == nil {
		t.Fatal("Serve on a closed listener returned nil")
	}
}

// TestConfigValidateNamesTheField: New refuses every setting it cannot
// use, guard's included, with an error naming it as the config file does,
// and never panics on one.
func TestConfigValidateNamesTheField(t *testing.T) {
	t.Parallel()
	for field, cfg := range map[string]Config{
		"header_timeout":      {HeaderTimeout: -1},
		"idle_timeout":        {IdleTimeout: -1},
		"ticket_lease":        {TicketLease: -1},
		"max_tickets":         {MaxTickets: -1},
		"sweep_every":         {SweepEvery: -1},
		"max_body_bytes":      {MaxBodyBytes: -1},
		"max_header_bytes":    {MaxHeaderBytes: 100},
		"shutdown_timeout":    {ShutdownTimeout: -1},
		"maintain_every":      {MaintainEvery: -1},
		"guard.threshold":     {Guard: guardConfig(-1)},
		"guard.window":        {Guard: guard.Config{Window: -1}},
		"guard.open_for":      {Guard: guard.Config{OpenFor: -1}},
		"guard.max_endpoints": {Guard: guard.Config{MaxEndpoints: -1}},
		"guard.idle_ttl":      {Guard: guard.Config{IdleTTL: -1}},
		"feeds[0].url":        {Guard: guard.Config{MaxProbes: -1}, Feeds: []Feed{{Name: "a"}}, FeedStore: sqlitetest.Open(t), Budget: &budget.Budget{}},
	} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			cfg.Logger = discardLogger()
			s, err := New(cfg)
			if err == nil {
				s.Close()
				t.Fatal("New accepted it")
			}
			ie, ok := errors.AsType[*InputError](err)
			if !ok || ie.Field != field || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), field) {
				t.Errorf("error %#v (%v) does not name %s as an *InputError", err, err, field)
			}
			if vErr := cfg.Validate(); vErr == nil || vErr.Error() != err.Error() {
				t.Errorf("Validate = %v, New = %v", vErr, err)
			}
		})
	}
}
