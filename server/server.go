package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/transport"
)

// Defaults for the zero fields of Config.
const (
	DefaultTicketLease     = 2 * time.Minute
	DefaultMaxTickets      = 100_000
	DefaultSweepEvery      = time.Second
	DefaultMaxBodyBytes    = 1 << 20
	DefaultShutdownTimeout = 10 * time.Second
)

// Config configures a Server. The zero value serves the guard, fetch and
// proxy routes with every default; the host and item routes answer 501
// until Health and Retry are set.
type Config struct {
	// Token is the bearer token that every route but GET /healthz
	// requires, and that the proxy requires as Proxy-Authorization. Empty
	// (the zero value) means no authentication; CheckListen refuses that
	// for an address beyond loopback.
	Token string

	// AllowPrivate lets the fetch route and the proxy reach loopback,
	// private, link-local, unspecified, multicast and reserved addresses.
	// false (the zero value) refuses them at dial time with 403.
	AllowPrivate bool

	// Guard configures the server's connectivity guard; zero fields take
	// guard's defaults. The server sets OnTransition for its log line and
	// metrics, then calls the one given here, if any.
	Guard guard.Config

	// HeaderTimeout bounds the wait for an upstream's response headers (and
	// for a CONNECT target's first byte once the client has spoken); 0
	// means transport.DefaultTimeout (30s).
	HeaderTimeout time.Duration

	// IdleTimeout bounds how long an upstream body may stall; 0 means
	// transport.DefaultTimeout (30s). A body that keeps arriving is never cut.
	IdleTimeout time.Duration

	// TicketLease is how long a ticket from POST /v1/guard/acquire stays
	// valid without a report; when it ends the ticket is released as
	// inconclusive, so a crashed client cannot hold a half-open endpoint's
	// trial. 0 means DefaultTicketLease (2m).
	TicketLease time.Duration

	// MaxTickets bounds the remote tickets held at once; an acquire beyond
	// it answers 429. 0 means DefaultMaxTickets (100 000).
	MaxTickets int

	// SweepEvery is how often expired remote tickets are looked for; a
	// ticket is released at most this long after its lease ends. 0 means
	// DefaultSweepEvery (1s).
	SweepEvery time.Duration

	// MaxBodyBytes bounds a JSON request body; a larger one answers 413.
	// Bodies forwarded by the fetch route and the proxy are not bounded.
	// 0 means DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64

	// ShutdownTimeout bounds how long Serve waits for in-flight requests
	// and tunnels once its context ends; after it they are cut. 0 means
	// DefaultShutdownTimeout (10s).
	ShutdownTimeout time.Duration

	// Health serves /v1/hosts. nil (the zero value) makes those routes
	// answer 501.
	Health *health.Tracker

	// Retry serves /v1/items. nil (the zero value) makes those routes
	// answer 501.
	Retry *retry.Scheduler

	// Budget serves /v1/budget. nil (the zero value) makes those routes
	// answer 501. The routes that change sources and pause work change
	// this Budget's in-memory configuration only: other nodes, and this
	// one after a restart, keep their own.
	Budget *budget.Budget

	// Elector elects the node of a cluster that runs the periodic work
	// (feed polls and pruning) while Serve runs. nil (the zero value): this
	// server always runs it, as a single node does.
	Elector *leader.Elector

	// Feeds are the Newznab or Torznab feeds the leader polls; they need
	// Budget and FeedStore. nil (the zero value): none.
	Feeds []Feed

	// FeedStore keeps the feeds' positions and serves /v1/feeds. nil (the
	// zero value) makes those routes answer 501.
	FeedStore feed.Store

	// Evidence serves /v1/evidence. nil (the zero value) makes those
	// routes answer 501. The caller closes it after Serve returns.
	Evidence *evidence.Book

	// MaintainEvery is how often the leader prunes budget usage older than
	// the budget keeps and evidence beyond its cap; the first run comes
	// at most a minute after leadership begins. 0 means
	// DefaultMaintainEvery (1h).
	MaintainEvery time.Duration

	// Logger receives startup, shutdown and guard transition lines, never a
	// line per request. nil means slog.Default().
	Logger *slog.Logger

	// Now is the clock for ticket leases and the status page. nil means
	// time.Now.
	Now func() time.Time
}

// Validate reports the first bad field of c, by name.
func (c Config) Validate() error {
	switch {
	case c.HeaderTimeout < 0:
		return fmt.Errorf("server: Config.HeaderTimeout is negative (%v)", c.HeaderTimeout)
	case c.IdleTimeout < 0:
		return fmt.Errorf("server: Config.IdleTimeout is negative (%v)", c.IdleTimeout)
	case c.TicketLease < 0:
		return fmt.Errorf("server: Config.TicketLease is negative (%v)", c.TicketLease)
	case c.MaxTickets < 0:
		return fmt.Errorf("server: Config.MaxTickets is negative (%d)", c.MaxTickets)
	case c.SweepEvery < 0:
		return fmt.Errorf("server: Config.SweepEvery is negative (%v)", c.SweepEvery)
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("server: Config.MaxBodyBytes is negative (%d)", c.MaxBodyBytes)
	case c.ShutdownTimeout < 0:
		return fmt.Errorf("server: Config.ShutdownTimeout is negative (%v)", c.ShutdownTimeout)
	case c.MaintainEvery < 0:
		return fmt.Errorf("server: Config.MaintainEvery is negative (%v)", c.MaintainEvery)
	case c.Guard.Threshold < 0:
		return fmt.Errorf("server: Config.Guard.Threshold is negative (%d)", c.Guard.Threshold)
	case c.Guard.Window < 0:
		return fmt.Errorf("server: Config.Guard.Window is negative (%v)", c.Guard.Window)
	case c.Guard.OpenFor < 0:
		return fmt.Errorf("server: Config.Guard.OpenFor is negative (%v)", c.Guard.OpenFor)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.TicketLease == 0 {
		c.TicketLease = DefaultTicketLease
	}
	if c.MaxTickets == 0 {
		c.MaxTickets = DefaultMaxTickets
	}
	if c.SweepEvery == 0 {
		c.SweepEvery = DefaultSweepEvery
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.MaintainEvery == 0 {
		c.MaintainEvery = DefaultMaintainEvery
	}
	if c.HeaderTimeout == 0 {
		c.HeaderTimeout = transport.DefaultTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = transport.DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Server is the hostguard daemon: the JSON API, the guarded fetch route, the
// forward proxy, metrics and the status page, over one connectivity guard.
// Create it with New; most callers then want Serve. A Server that is not
// served must be closed, since it runs a goroutine that expires remote
// tickets.
type Server struct {
	cfg     Config
	log     *slog.Logger
	guard   *guard.Guard
	rt      *transport.Transport
	base    *http.Transport
	dialer  *dialer
	token   tokenMatcher
	tickets *ticketTable
	metrics *metrics
	api     http.Handler
	proxy   http.Handler
	tunnels tunnelSet
	active  activity

	feeds      []*feedRunner
	feedReader *feed.Syncer    // reads and resets stored positions; nil without FeedStore
	feedBase   *http.Transport // the feeds' connections; nil without feeds
	// leading is true while this node runs the periodic work.
	leading atomic.Bool

	// baseCtx is the parent of every request Serve handles; cancelling it
	// at the end of a shutdown cuts in-flight upstream requests, so their
	// guard tickets are released.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	stop      chan struct{}
	sweepDone chan struct{}
	closeOnce sync.Once
}

// New returns a Server for cfg, or an error naming the bad field.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		token:     newTokenMatcher(cfg.Token),
		stop:      make(chan struct{}),
		sweepDone: make(chan struct{}),
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.tickets = newTicketTable(cfg.TicketLease, cfg.MaxTickets, cfg.Now)
	s.metrics = newMetrics(s)

	gcfg := cfg.Guard
	userHook := gcfg.OnTransition
	gcfg.OnTransition = func(endpoint string, from, to guard.State) {
		s.metrics.transitions.WithLabelValues(from.String(), to.String()).Inc()
		s.log.Info("guard: endpoint changed state", "endpoint", endpoint, "from", from.String(), "to", to.String())
		if userHook != nil {
			userHook(endpoint, from, to)
		}
	}
	s.guard = guard.New(gcfg)

	s.dialer = newDialer(cfg.AllowPrivate, cfg.HeaderTimeout)
	s.base = &http.Transport{
		// Proxy stays nil on purpose: the daemon is often someone's
		// HTTP_PROXY, and reading that here would send its own upstream
		// requests back into itself.
		Proxy:                 nil,
		DialContext:           s.dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.HeaderTimeout,
		ExpectContinueTimeout: time.Second,
	}
	s.rt = transport.New(transport.Config{
		Base:          s.base,
		Guard:         s.guard,
		HeaderTimeout: cfg.HeaderTimeout,
		IdleTimeout:   cfg.IdleTimeout,
	})
	if err := s.setupFeeds(); err != nil {
		s.cancelBase()
		return nil, err
	}
	s.api = s.routes()
	s.proxy = http.HandlerFunc(s.serveProxy)
	go s.sweep()
	return s, nil
}

// Guard returns the server's connectivity guard, for embedding programs
// that want to share it.
func (s *Server) Guard() *guard.Guard { return s.guard }

// Handler returns the API: /v1/..., /healthz, /metrics and the status page.
func (s *Server) Handler() http.Handler { return s.api }

// ProxyHandler returns the forward proxy, to be served on a listener of its
// own.
func (s *Server) ProxyHandler() http.Handler { return s.proxy }

// routes registers every API route. Each is timed under its own pattern and,
// except /healthz, behind the token.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, auth bool, h http.HandlerFunc) {
		var hh http.Handler = h
		if auth {
			hh = s.requireToken(hh)
		}
		mux.Handle(pattern, s.metrics.instrument(pattern, hh))
	}
	handle("GET /healthz", false, s.healthz)
	handle("GET /metrics", true, s.metrics.handler().ServeHTTP)
	handle("GET /{$}", true, s.statusPage)
	handle("GET /v1/status", true, s.status)

	handle("POST /v1/guard/acquire", true, s.guardAcquire)
	handle("POST /v1/guard/report", true, s.guardReport)
	handle("POST /v1/guard/reset", true, s.guardReset)
	handle("GET /v1/guard", true, s.guardList)

	handle("GET /v1/fetch", true, s.fetch)
	handle("POST /v1/fetch", true, s.fetch)

	handle("POST /v1/hosts/{name}/touch", true, s.hostTouch)
	handle("GET /v1/hosts", true, s.hostList)
	handle("GET /v1/hosts/{name}", true, s.hostGet)

	handle("POST /v1/items", true, s.itemsAdd)
	handle("POST /v1/items/claim", true, s.itemsClaim)
	handle("POST /v1/items/observe", true, s.itemsObserve)
	handle("POST /v1/items/settle", true, s.itemsSettle)
	handle("GET /v1/items/stats", true, s.itemsStats)
	handle("GET /v1/items/{id}", true, s.itemGet)
	handle("POST /v1/items/{id}/{op}", true, s.itemOp)

	handle("POST /v1/budget/admit", true, s.budgetAdmit)
	handle("POST /v1/budget/grants/{id}/settle", true, s.budgetSettle)
	handle("GET /v1/budget", true, s.budgetReport)
	handle("PUT /v1/budget/sources/{name}", true, s.budgetSetSource)
	handle("DELETE /v1/budget/sources/{name}", true, s.budgetRemoveSource)
	handle("POST /v1/budget/pause", true, s.budgetPause)

	handle("GET /v1/leader", true, s.leaderGet)

	handle("GET /v1/feeds", true, s.feedList)
	handle("POST /v1/feeds/{name}/reset", true, s.feedReset)
	handle("GET /v1/feeds/{name}/items", true, s.feedItems)

	handle("POST /v1/evidence", true, s.evidenceRecord)
	handle("POST /v1/evidence/policy", true, s.evidencePolicy)
	handle("GET /v1/evidence/{subject}", true, s.evidenceGet)

	// Anything else gets a JSON 404 or 405 rather than the mux's text
	// answer, so clients can always parse an error. It is timed under one
	// label, so unknown paths cannot grow the metric.
	fallback := s.metrics.instrument("unmatched", s.requireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _ := mux.Handler(r)
		probe := &probeWriter{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.code == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed,
				Message: fmt.Sprintf("server: method %s is not allowed here; allowed: %s", r.Method, probe.header.Get("Allow"))})
			return
		}
		writeError(w, &apiError{Status: http.StatusNotFound, Message: "server: no such route"})
	})))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			fallback.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// probeWriter learns what the mux would answer to an unmatched request
// (404, or 405 with an Allow header) without sending its text body.
type probeWriter struct {
	header http.Header
	code   int
}

func (p *probeWriter) Header() http.Header         { return p.header }
func (p *probeWriter) Write(b []byte) (int, error) { return len(b), nil }
func (p *probeWriter) WriteHeader(code int)        { p.code = code }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Serve answers the API on api and the forward proxy on proxy (nil leaves
// the proxy off) until ctx ends, then shuts down gracefully: it stops
// accepting, lets in-flight requests and tunnels finish for at most
// Config.ShutdownTimeout, cuts what remains (which releases their guard
// tickets), releases every remote ticket and stops the sweeper. It returns
// nil after a shutdown that ctx asked for, or the error that stopped a
// listener. The caller still owns and closes the stores behind Health and
// Retry.
func (s *Server) Serve(ctx context.Context, api, proxy net.Listener) error {
	errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	mk := func(h http.Handler) *http.Server {
		return &http.Server{
			Handler:           s.active.track(h),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          errorLog,
			BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
		}
	}
	servers := []*http.Server{mk(s.api)}
	listeners := []net.Listener{api}
	if proxy != nil {
		servers = append(servers, mk(s.proxy))
		listeners = append(listeners, proxy)
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	// The periodic work stops first on the way out: it must not outlive
	// the stores the caller closes after Serve.
	leadCtx, stopLead := context.WithCancel(context.Background())
	defer stopLead()
	leadDone := make(chan struct{})
	go func() {
		defer close(leadDone)
		s.runLeader(leadCtx)
	}()
	var serveErr error
	running := len(servers)
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		running--
		if errors.Is(serveErr, http.ErrServerClosed) {
			serveErr = nil
		}
	}
	s.log.Info("server: shutting down", "drain", s.cfg.ShutdownTimeout)
	stopLead()
	drainCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(func() { _ = srv.Shutdown(drainCtx) })
	}
	wg.Go(func() { s.tunnels.wait(drainCtx) })
	wg.Wait()
	if drainCtx.Err() != nil {
		s.log.Warn("server: in-flight work did not finish in time; cutting it", "drain", s.cfg.ShutdownTimeout)
	}
	// Whatever is left is cut now: cancelling the base context stops the
	// upstream requests (the transport then releases their tickets), and
	// closing the servers and tunnels drops their connections.
	s.cancelBase()
	for _, srv := range servers {
		_ = srv.Close()
	}
	s.tunnels.closeAll()
	s.tunnels.waitAll()
	for ; running > 0; running-- {
		<-errc
	}
	// Handlers of cut connections return promptly once their context is
	// cancelled; waiting for them means no handler outlives Serve.
	lastCtx, cancelLast := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelLast()
	if !s.active.wait(lastCtx) {
		s.log.Warn("server: some handlers were still running at exit")
	}
	<-leadDone
	s.Close()
	s.log.Info("server: stopped")
	return serveErr
}

// Close stops the ticket sweeper, releases every remote ticket as
// inconclusive and closes idle upstream connections. It is idempotent;
// Serve calls it on the way out.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.sweepDone
		s.tickets.releaseAll()
		s.cancelBase()
		s.base.CloseIdleConnections()
		if s.feedBase != nil {
			s.feedBase.CloseIdleConnections()
		}
	})
	return nil
}

// sweep releases remote tickets whose lease ended.
func (s *Server) sweep() {
	defer close(s.sweepDone)
	t := time.NewTicker(s.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.expireTickets()
		}
	}
}

func (s *Server) expireTickets() {
	if n := s.tickets.expire(); n > 0 {
		s.metrics.expired.Add(float64(n))
	}
}

// activity counts running handlers. It is not a sync.WaitGroup because
// handlers may start while Serve waits (a connection accepted just before
// the listener closed), which a WaitGroup does not allow.
type activity struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

func (a *activity) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.n++
		a.mu.Unlock()
		defer a.leave()
		h.ServeHTTP(w, r)
	})
}

func (a *activity) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n--
	if a.n == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
}

// wait reports whether every handler returned before ctx ended.
func (a *activity) wait(ctx context.Context) bool {
	a.mu.Lock()
	if a.n == 0 {
		a.mu.Unlock()
		return true
	}
	if a.idle == nil {
		a.idle = make(chan struct{})
	}
	ch := a.idle
	a.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}
