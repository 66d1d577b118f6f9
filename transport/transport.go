package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// DefaultTimeout is what a zero HeaderTimeout or IdleTimeout becomes.
const DefaultTimeout = 30 * time.Second

// Config configures a Transport. The zero value is ready to use.
type Config struct {
	// Base sends the requests. nil means a clone of http.DefaultTransport.
	// It must stop a request, and a body read, when the request's context
	// is cancelled; http.Transport does.
	Base http.RoundTripper

	// Guard decides which endpoints may be contacted. nil means a guard of
	// its own with guard.Config defaults, whose transitions go to Logger.
	// A caller that supplies a guard also owns its logging, through
	// guard.Config.OnTransition.
	Guard *guard.Guard

	// HeaderTimeout bounds the wait for response headers, per hop. Expiry
	// counts as the host not answering. 0 means DefaultTimeout.
	HeaderTimeout time.Duration

	// IdleTimeout bounds how long one body read may wait for data; every
	// read that makes progress starts it again, so total transfer time is
	// never bounded. Expiry does not count against the host. 0 means
	// DefaultTimeout.
	IdleTimeout time.Duration

	// Logger receives one line per state transition of the guard New
	// creates when Guard is nil; it is unused otherwise. nil means
	// slog.Default(). Lines name the endpoint (an origin) and nothing else
	// of the URL.
	Logger *slog.Logger
}

// Transport is an http.RoundTripper guarded per endpoint. It is safe for
// concurrent use; create it with New. Most callers want
// &http.Client{Transport: transport.New(transport.Config{})}.
type Transport struct {
	base          http.RoundTripper
	guard         *guard.Guard
	headerTimeout time.Duration
	idleTimeout   time.Duration
}

// New returns a Transport for cfg. It panics with a message naming the field
// if a timeout is negative: that is a programming error, like a negative
// interval given to time.NewTicker.
func New(cfg Config) *Transport {
	if cfg.HeaderTimeout < 0 {
		panic(fmt.Sprintf("transport: Config.HeaderTimeout is negative (%v)", cfg.HeaderTimeout))
	}
	if cfg.IdleTimeout < 0 {
		panic(fmt.Sprintf("transport: Config.IdleTimeout is negative (%v)", cfg.IdleTimeout))
	}
	t := &Transport{
		base:          cfg.Base,
		guard:         cfg.Guard,
		headerTimeout: cfg.HeaderTimeout,
		idleTimeout:   cfg.IdleTimeout,
	}
	if t.base == nil {
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			t.base = dt.Clone()
		} else {
			t.base = http.DefaultTransport
		}
	}
	if t.guard == nil {
		log := cfg.Logger
		if log == nil {
			log = slog.Default()
		}
		t.guard = guard.New(guard.Config{
			OnTransition: func(endpoint string, from, to guard.State) {
				log.Info("hostguard: endpoint state changed", "endpoint", endpoint, "from", from, "to", to)
			},
		})
	}
	if t.headerTimeout == 0 {
		t.headerTimeout = DefaultTimeout
	}
	if t.idleTimeout == 0 {
		t.idleTimeout = DefaultTimeout
	}
	return t
}

// Guard returns the guard the transport consults, for Reset and State.
func (t *Transport) Guard() *guard.Guard { return t.guard }

// CloseIdleConnections closes the base transport's idle connections, if it
// has a CloseIdleConnections method. http.Client.CloseIdleConnections calls
// it.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends one hop through the guard. It honours the RoundTripper
// contract: any response is returned with a nil error, and req is never
// modified. When the guard refuses the endpoint it returns an error wrapping
// *guard.OpenError without touching the network.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
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
	origin := req.URL.Scheme + "://" + req.URL.Host
	acquire := t.guard.Acquire
	if isExempt(ctx) {
		acquire = t.guard.AcquireExempt
	}
	ticket, err := acquire(origin)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// Release is idempotent and harmless after Answered or Failed; here it
	// is the backstop that frees a trial slot on every path, panics
	// included.
	defer ticket.Release()

	hctx, cancel := context.WithCancel(ctx)
	// The timer calls cancel directly: no closure to allocate, and no
	// goroutine unless it fires. Stop's result then says whether it did.
	timer := time.AfterFunc(t.headerTimeout, cancel)
	returned := false
	defer func() {
		if !returned {
			// The base panicked; the panic continues after this.
			timer.Stop()
			cancel()
		}
	}()
	hreq := req.WithContext(hctx)
	resp, err := t.base.RoundTrip(hreq)
	returned = true

	inTime := timer.Stop()
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close() // A base that breaks the contract.
		}
		cancel()
		if !inTime {
			err = &timeoutError{endpoint: ticket.Endpoint(), after: t.headerTimeout}
		}
		ticket.Failed(err)
		return nil, err
	}
	if resp == nil {
		cancel()
		return nil, errors.New("transport: base RoundTripper returned no response and no error")
	}
	ticket.Answered()
	if resp.Request == hreq {
		resp.Request = req
	}
	switch {
	case !inTime:
		// The timer fired as the headers arrived and has cancelled the
		// context, so the body could not be read.
		if resp.Body != nil {
			resp.Body.Close()
		}
		cancel()
		return nil, &timeoutError{endpoint: ticket.Endpoint(), after: t.headerTimeout}
	case resp.StatusCode == http.StatusSwitchingProtocols:
		// The body is now a two-way stream that callers type-assert to
		// io.ReadWriteCloser, and the context may govern it; leave both
		// alone.
	case resp.Body == nil || resp.Body == http.NoBody:
		cancel()
	default:
		resp.Body = &body{
			rc:       resp.Body,
			timer:    timer,
			cancel:   cancel,
			idle:     t.idleTimeout,
			endpoint: ticket.Endpoint(),
		}
	}
	return resp, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
