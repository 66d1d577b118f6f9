package transport

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/hop"
)

// Transport is an http.RoundTripper guarded per endpoint. It is safe for
// concurrent use; create it with New. Most callers want
// &http.Client{Transport: transport.New(transport.Config{})}.
type Transport struct {
	base          http.RoundTripper
	sender        *hop.Base // base, as the forwarding rules send through it
	guard         *guard.Guard
	ownGuard      bool // New created guard, so Close closes it
	origins       origins
	headerTimeout time.Duration
	idleTimeout   time.Duration
	budget        Budget       // admits requests that carry an admission; nil: none
	logger        *slog.Logger // for what admission cannot report to a caller
}

// New returns a Transport for cfg. It panics with the error Validate
// returns if cfg is invalid: that is a programming error, like a negative
// interval given to time.NewTicker. Check configuration that comes from
// users with Validate first.
func New(cfg Config) *Transport {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	t := &Transport{
		base:          cfg.Base,
		guard:         cfg.Guard,
		headerTimeout: cfg.HeaderTimeout,
		idleTimeout:   cfg.IdleTimeout,
		budget:        cfg.Budget,
		logger:        cfg.Logger,
	}
	if t.logger == nil {
		t.logger = slog.Default()
	}
	if t.headerTimeout == 0 {
		t.headerTimeout = DefaultHeaderTimeout
	}
	if t.base == nil {
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			t.base = dt.Clone()
		} else {
			t.base = http.DefaultTransport
		}
	}
	t.sender = &hop.Base{RT: t.base}
	if t.guard == nil {
		log := cfg.Logger
		if log == nil {
			log = slog.Default()
		}
		gcfg := guard.Config{
			OnTransition: func(endpoint string, from, to guard.State) {
				log.Info("hostguard: endpoint state changed", "endpoint", endpoint, "from", from, "to", to)
			},
		}
		if cfg.Probe {
			gcfg.Probe = ProbeFunc(t.base, t.headerTimeout)
		}
		t.guard = guard.New(gcfg)
		t.ownGuard = true
	}
	if t.idleTimeout == 0 {
		t.idleTimeout = DefaultIdleTimeout
	}
	return t
}

// Guard returns the guard the transport consults, for Reset and State.
func (t *Transport) Guard() *guard.Guard { return t.guard }

// Close stops the probes of the guard New created when Config.Guard was
// nil, and waits for them; the transport keeps working, without probes. A
// guard the caller supplied is the caller's to close. Close always
// returns nil.
func (t *Transport) Close() error {
	if t.ownGuard {
		return t.guard.Close()
	}
	return nil
}

// CloseIdleConnections closes the base transport's idle connections, if it
// has a CloseIdleConnections method. http.Client.CloseIdleConnections calls
// it.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends one hop through the budget (see WithAdmission) and the
// guard. It honours the RoundTripper contract: any response is returned
// with a nil error, and req is never modified. When the budget or the
// guard refuses, it returns an error (wrapping the budget's refusal, or
// *guard.OpenError) without touching the network.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	adm, err := t.admit(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.roundTrip(req)
	if err != nil {
		adm.failed()
		return nil, err
	}
	adm.answered(resp)
	return resp, nil
}

func (t *Transport) roundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("transport: request has no URL")
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		// Already cancelled: it says nothing about the host, and must
		// not take the half-open trial slot from a request that would run.
		closeBody(req)
		return nil, err
	}
	// The guard keys on the origin alone, so it never sees the path,
	// query or userinfo, and a credential cannot reach a log line.
	origin := t.origins.of(req.URL)
	var ticket *guard.Ticket
	var err error
	if isExempt(ctx) {
		ticket, err = t.guard.AcquireExempt(origin)
	} else {
		// A wait for the endpoint's trial ends with the request's context.
		ticket, err = t.guard.AcquireContext(ctx, origin)
	}
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// Release is idempotent and harmless after Answered or Failed; here it
	// is the backstop that frees a trial slot on every path, panics
	// included.
	defer ticket.Release()

	return hop.RoundTrip(ctx, req, ticket, hop.Rules{Timeout: t.headerTimeout, Idle: t.idleTimeout}, t.sender)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
