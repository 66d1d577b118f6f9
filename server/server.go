package server

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/server/internal/dashboard"
	"github.com/hostguard/hostguard/server/internal/netpolicy"
	"github.com/hostguard/hostguard/server/internal/upstream"
	"github.com/hostguard/hostguard/transport"
)

// Server is the hostguard daemon: the JSON API, the guarded fetch route, the
// forward proxy, metrics and the status page, over one connectivity guard.
// Create it with New; most callers then want Serve. A Server that is not
// served must be closed, since it runs a goroutine that expires remote
// tickets.
type Server struct {
	cfg Config
	log *slog.Logger
	// version is Config.Version or what the build recorded; started is
	// when New ran, for the uptime the status page shows.
	version string
	started time.Time
	guard   *guard.Guard
	link    guard.Link // shares the guard's verdicts with other nodes; nil when not
	base    *http.Transport
	dialer  *netpolicy.Dialer
	// upstream is what fetch and the proxy send through: plain HTTP on
	// the caller's goroutine, base for the rest.
	upstream *upstream.Pool
	// probeFunc sends the guard's recovery probes through base; see probe.
	probeFunc func(ctx context.Context, endpoint string) error
	token     tokenMatcher
	authLimit *authLimit
	own       *netpolicy.OwnAddrs
	errLog    errorLimiter // 500s
	outageLog errorLimiter // 503s of a store that could not be reached
	tickets   *ticketTable
	metrics   *metrics
	api       http.Handler
	proxy     http.Handler
	tunnels   tunnelSet
	active    activity

	// hosts feeds the status page what the store does not keep: each
	// host's recent outcomes. sessions are the dashboard's logins.
	hosts    *hostHistory
	sessions *dashboard.Sessions
	// due is the status report's last due histogram; see dueCache.
	due dueCache

	// feeds are the configured feeds, replaced whole by SetFeeds;
	// leadCtx is the leadership their loops run under, nil while this
	// node does not lead. Both under feedsMu; reloadMu keeps SetFeeds
	// calls one at a time.
	feedsMu    sync.Mutex
	reloadMu   sync.Mutex
	feeds      []*feedRunner
	leadCtx    context.Context
	feedReader *feed.Syncer                   // reads and resets stored positions; nil without FeedStore
	feedBase   atomic.Pointer[http.Transport] // the feeds' connections; nil until a feed is configured
	feedClient *http.Client                   // over feedBase; under reloadMu after New
	// leading is true while this node runs the periodic work.
	leading atomic.Bool

	// baseCtx is the parent of every request Serve handles; cancelling it
	// at the end of a shutdown cuts in-flight upstream requests, so their
	// guard tickets are released.
	baseCtx    context.Context
	cancelBase context.CancelFunc
	// draining ends when a shutdown starts: waiting claims then answer
	// at once instead of holding the drain up.
	draining     context.Context
	stopDraining context.CancelFunc

	// wakes runs the wakes of hosts that answered again; nil without a
	// retry queue.
	wakes *hostWaker

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
		authLimit: &authLimit{now: cfg.Now},
		stop:      make(chan struct{}),
		sweepDone: make(chan struct{}),
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.draining, s.stopDraining = context.WithCancel(context.Background())
	s.own = netpolicy.NewOwnAddrs(cfg.Now)
	s.version, s.started = buildVersion(cfg.Version), cfg.Now()
	s.tickets = newTicketTable(cfg.TicketLease, cfg.MaxTickets, cfg.Now)
	s.metrics = newMetrics(s)
	s.hosts = newHostHistory(outcomeHosts)
	s.sessions = dashboard.NewSessions(maxSessions, sessionLifetime, cfg.Now)

	if err := s.setupGuard(cfg); err != nil {
		s.cancelBase()
		return nil, err
	}
	s.setupUpstream(cfg)
	if err := s.setupFeeds(); err != nil {
		s.cancelBase()
		return nil, err
	}
	s.api = s.browserGuard(s.routes())
	s.proxy = s.metrics.timeProxy(s.apiHandler(s.serveProxy))
	s.startHostWaker()
	go s.sweep()
	return s, nil
}

// setupGuard builds the connectivity guard: its metrics and log on every
// transition, its probe, and, on a shared store, its link to the other
// nodes.
func (s *Server) setupGuard(cfg Config) error {
	gcfg := cfg.Guard
	userHook := gcfg.OnTransition
	gcfg.OnTransition = func(endpoint string, from, to guard.State) {
		s.metrics.transitions.WithLabelValues(from.String(), to.String()).Inc()
		s.log.Info("guard: endpoint changed state", "endpoint", endpoint, "from", from.String(), "to", to.String())
		if userHook != nil {
			userHook(endpoint, from, to)
		}
	}
	if gcfg.Probe == nil {
		// The base is built below; the probe reads it when it runs.
		gcfg.Probe = s.probe
	}
	if gcfg.Share == nil && cfg.ShareStore != nil && cfg.GuardShare != "off" {
		node := ""
		if cfg.Elector != nil {
			node = cfg.Elector.NodeID()
		}
		// The lease outlives one probe, which waits at most a header
		// timeout, with room to publish its result; a node that dies
		// holding it delays the cluster's next probe by no more.
		link, err := cfg.ShareStore.GuardShare(guard.StoreShareParams{Node: node, LeaseFor: cfg.HeaderTimeout + 5*time.Second, Now: cfg.Now})
		if err != nil {
			return err
		}
		s.link, gcfg.Share = link, link
	}
	// After the link is chosen: the watch passes everything on to it.
	gcfg.Share = s.watchAnswers(gcfg.Share)
	s.guard = guard.New(gcfg)
	if s.link != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.link.Start(ctx, s.guard.Apply); err != nil {
			// The link keeps trying in the background; until it
			// connects, this node's guard decides alone.
			s.log.Warn("guard: sharing verdicts is not connected yet", "err", err)
		}
		cancel()
	}

	return nil
}

// setupUpstream builds what the daemon's own outbound requests go
// through: the policy's dialer, net/http's transport for what the fast
// upstream pool does not carry, the pool, and the probe's request.
func (s *Server) setupUpstream(cfg Config) {
	s.dialer = netpolicy.NewDialer(cfg.AllowPrivate, cfg.HeaderTimeout, s.own)
	s.base = &http.Transport{
		// Proxy stays nil on purpose: the daemon is often someone's
		// HTTP_PROXY, and reading that here would send its own upstream
		// requests back into itself.
		Proxy:             nil,
		DialContext:       s.dialer.DialContext,
		ForceAttemptHTTP2: true,
		MaxIdleConns:      256,
		// As many idle connections per host as a busy client keeps open
		// to the proxy: with fewer, every request beyond them dials anew.
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.HeaderTimeout,
		ExpectContinueTimeout: time.Second,
		// The proxy and fetch forward what the client sent: no
		// Accept-Encoding it did not ask for, and no decompression
		// behind its back.
		DisableCompression: true,
	}
	s.upstream = upstream.New(s.base, s.dialer.DialContext, s.base.IdleConnTimeout, s.base.MaxIdleConnsPerHost)
	s.probeFunc = transport.ProbeFunc(s.base, cfg.HeaderTimeout)
}

// Guard returns the server's connectivity guard, for embedding programs
// that want to share it.
func (s *Server) Guard() *guard.Guard { return s.guard }

// Handler returns the API: /v1/..., /healthz, /metrics and the status page.
func (s *Server) Handler() http.Handler { return s.api }

// ProxyHandler returns the forward proxy, to be served on a listener of its
// own.
func (s *Server) ProxyHandler() http.Handler { return s.proxy }

// Close stops the ticket sweeper, releases every remote ticket as
// inconclusive and closes idle upstream connections. It is idempotent;
// Serve calls it on the way out.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.sweepDone
		s.tickets.releaseAll()
		s.guard.Close()
		if s.link != nil {
			s.link.Close()
		}
		s.cancelBase()
		if s.wakes != nil {
			<-s.wakes.done
		}
		s.upstream.CloseIdle(true)
		if b := s.feedBase.Load(); b != nil {
			b.CloseIdleConnections()
		}
	})
	return nil
}

// sweep releases remote tickets whose lease ended, and closes upstream
// connections idle too long.
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
			s.upstream.Expire()
		}
	}
}

func (s *Server) expireTickets() {
	if n := s.tickets.expire(); n > 0 {
		s.metrics.expired.Add(float64(n))
	}
}

// buildVersion is v, else the module version the go command recorded,
// else "devel".
func buildVersion(v string) string {
	if v != "" {
		return v
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
