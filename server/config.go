package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
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
	DefaultMaxConns        = 1024
	DefaultMaxHeaderBytes  = 64 << 10
	DefaultBodyTimeout     = time.Minute
	// DefaultDashboardRefresh is how often the dashboard reloads its
	// figures.
	DefaultDashboardRefresh = 5 * time.Second

	// DefaultGuardMaxOpenFor is the daemon's growth cap for open periods
	// (guard.Config.MaxOpenFor), where the library's default is no
	// growth: docs/design.md ("guard: probes and growth") says why.
	DefaultGuardMaxOpenFor = guard.SuggestedMaxOpenFor

	// DefaultGuardTrialWait is how long, at most, a request that finds an
	// endpoint's half-open trial out waits for its outcome
	// (guard.Config.TrialWait), where the library's default is no wait:
	// docs/design.md ("Waiting for the trial") says why.
	DefaultGuardTrialWait = guard.SuggestedTrialWait

	// DefaultGuardShare shares guard verdicts wherever the store can
	// carry them: on PostgreSQL, not on SQLite.
	DefaultGuardShare = "auto"
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

	// AllowedHosts are the names, beyond loopback names and addresses and
	// the listen address, that the API answers to in the Host header
	// ("hostguard.lan" or "hostguard.lan:7411"). A request naming any other
	// host answers 421, which is what keeps a DNS-rebinding page from
	// reading the API. nil (the zero value): none.
	AllowedHosts []string

	// Guard configures the server's connectivity guard; zero fields take
	// guard's defaults, except three the daemon sets otherwise. A nil Probe
	// means the server's own: HEAD <endpoint>/ through the same dialer,
	// and so the same destination policy, as the fetch route, counted in
	// hostguard_guard_probes_total; a negative MaxProbes turns probes off.
	// A zero MaxOpenFor means DefaultGuardMaxOpenFor (2m); negative turns
	// growth off. A zero TrialWait means DefaultGuardTrialWait (2s);
	// negative refuses at once while a trial is out. The server sets
	// OnTransition for its log line and metrics, then calls the one given
	// here, if any.
	Guard guard.Config

	// GuardShare says whether the guard shares its verdicts with the other
	// nodes on the store (guard.Config.Share, through ShareStore): "auto"
	// shares when ShareStore is set, "on" requires it, "off" never
	// shares. Empty means DefaultGuardShare ("auto"). A Guard.Share given
	// here is used as it is.
	GuardShare string

	// ShareStore carries the guard's transitions between nodes when
	// GuardShare allows (store/postgres can; SQLite, with one node, has
	// nothing to share with). nil (the zero value): nothing is shared.
	ShareStore guard.ShareStore

	// HeaderTimeout bounds the wait for an upstream's response headers (and
	// for a CONNECT target's first byte once the client has spoken); 0
	// means transport.DefaultHeaderTimeout (30s).
	HeaderTimeout time.Duration

	// IdleTimeout bounds how long an upstream body may stall; 0 means
	// transport.DefaultIdleTimeout (30s). A body that keeps arriving is never cut.
	IdleTimeout time.Duration

	// TicketLease is how long a ticket from POST /v1/guard/acquire stays
	// valid without a report; when it ends the ticket is released as
	// inconclusive, so a crashed client cannot hold a half-open endpoint's
	// trial. 0 means DefaultTicketLease (2m).
	TicketLease time.Duration

	// MaxTickets bounds the remote tickets held at once; an acquire beyond
	// it answers 429. One client (one remote address) may hold a quarter
	// of it, so a single client cannot starve the others. 0 means
	// DefaultMaxTickets (100 000; 25 000 per client).
	MaxTickets int

	// SweepEvery is how often expired remote tickets are looked for; a
	// ticket is released at most this long after its lease ends. 0 means
	// DefaultSweepEvery (1s).
	SweepEvery time.Duration

	// MaxBodyBytes bounds a JSON request body; a larger one answers 413.
	// Bodies forwarded by the fetch route and the proxy are not bounded.
	// 0 means DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64

	// MaxConns caps the client connections open at once on each listener
	// (the API's and the proxy's, counted apart); a connection beyond it is
	// answered 503 with Proxy-Status connection_limit_reached and closed.
	// 0 means DefaultMaxConns (1024); a negative value means no cap.
	MaxConns int

	// MaxHeaderBytes bounds a client's request head (request line and
	// headers) on both listeners; a larger one is answered 431 and its
	// connection closed. net/http reads up to 4 KiB past it before it
	// refuses. 0 means DefaultMaxHeaderBytes (64 KiB); a negative value
	// means no bound of the daemon's own, only net/http's (1 MiB); a
	// positive one must be at least 1024.
	MaxHeaderBytes int

	// BodyTimeout bounds the whole read of a client's request (headers
	// and body) and the write of a JSON answer, so a client that trickles
	// its body cannot hold a connection open. Streamed answers (fetch, the
	// proxy, tunnels and waiting admissions) lift the bound once their
	// handler starts. 0 means DefaultBodyTimeout (1m); a negative value
	// means none.
	BodyTimeout time.Duration

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
	// answer 501. The routes that change sources and pause work store the
	// change, so every node that shares the store sees it and it outlives
	// a restart; a source of the daemon's configuration keeps its
	// configured settings under the stored change.
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

	// Ready checks the store behind the daemon for GET /readyz: that it
	// answers, with the schema version the daemon started on. Its error's
	// text is shown to the caller, so it must be short and carry no
	// driver detail. nil (the zero value): only the leader is checked.
	Ready func(ctx context.Context) error

	// Logger receives startup, shutdown and guard transition lines, never a
	// line per request. nil means slog.Default().
	Logger *slog.Logger

	// Now is the clock for ticket leases and the status page. nil means
	// time.Now.
	Now func() time.Time

	// Version is the daemon's version, shown on the status page and in
	// hostguard_build_info. Empty (the zero value) means the module
	// version the go command recorded, else "devel".
	Version string

	// StoreKind names the store the daemon runs on ("sqlite",
	// "postgres"), for the status page. Empty (the zero value): not shown.
	StoreKind string

	// headTimeout bounds the wait for a new connection's first request
	// head, first byte to last, and for the rest of any later head once
	// its first bytes came; 0 means connReadHeaderTimeout. Tests shorten
	// it.
	headTimeout time.Duration

	// DashboardRefresh is how often the dashboard's page reloads its
	// figures from GET /v1/status. 0 (the zero value) means
	// DefaultDashboardRefresh (5s).
	DashboardRefresh time.Duration
}

// Validate reports the first setting of c that New cannot use, as an
// *InputError (matching ErrInvalid) whose Field is the setting's
// snake_case name as the daemon's config file spells it, dotted into the
// part it belongs to: "ticket_lease", "guard.open_for", "feeds[1].url".
// The rules of a part are its package's: Validate delegates to
// guard.Config.Validate, transport.Config.Validate and Feed.Validate and
// restates none of them.
func (c Config) Validate() error {
	for _, d := range []struct {
		field string
		v     time.Duration
		def   time.Duration
	}{
		{"ticket_lease", c.TicketLease, DefaultTicketLease},
		{"sweep_every", c.SweepEvery, DefaultSweepEvery},
		{"shutdown_timeout", c.ShutdownTimeout, DefaultShutdownTimeout},
		{"maintain_every", c.MaintainEvery, DefaultMaintainEvery},
		{"dashboard_refresh", c.DashboardRefresh, DefaultDashboardRefresh},
	} {
		if d.v < 0 {
			return invalid(d.field, "is %v; want 0 (default %v) or more", d.v, d.def)
		}
	}
	switch {
	case c.MaxTickets < 0:
		return invalid("max_tickets", "is %d; want 0 (default %d) or more", c.MaxTickets, DefaultMaxTickets)
	case c.MaxBodyBytes < 0:
		return invalid("max_body_bytes", "is %d; want 0 (default %d) or more", c.MaxBodyBytes, DefaultMaxBodyBytes)
	case c.MaxHeaderBytes > 0 && c.MaxHeaderBytes < 1024:
		return invalid("max_header_bytes", "is %d; want 0 (default %d), at least 1024, or negative for net/http's own bound",
			c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	}
	if err := c.transportConfig().Validate(); err != nil {
		return under("", err)
	}
	if err := c.Guard.Validate(); err != nil {
		return under("guard", err)
	}
	switch c.GuardShare {
	case "", "auto", "off":
	case "on":
		if c.ShareStore == nil && c.Guard.Share == nil {
			return invalid("guard.share", "is on, but the store cannot share guard verdicts (only PostgreSQL can)")
		}
	default:
		return invalid("guard.share", "is %q; want auto, on or off", c.GuardShare)
	}
	return c.validateFeeds()
}

// transportConfig is the part of c the guarded transport takes.
func (c Config) transportConfig() transport.Config {
	return transport.Config{HeaderTimeout: c.HeaderTimeout, IdleTimeout: c.IdleTimeout}
}

func (c Config) validateFeeds() error {
	if len(c.Feeds) == 0 {
		return nil
	}
	switch {
	case c.FeedStore == nil:
		return invalid("feeds", "are set but FeedStore is nil")
	case c.Budget == nil:
		return invalid("feeds", "are set but Budget is nil: every feed page passes admission")
	}
	for i, f := range c.Feeds {
		at := fmt.Sprintf("feeds[%d]", i)
		if err := f.Validate(); err != nil {
			return under(at, err)
		}
		for j := range i {
			if c.Feeds[j].Name == f.Name {
				return invalid(at+".name", "%q is also feeds[%d]", f.Name, j)
			}
		}
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
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	switch {
	case c.MaxHeaderBytes == 0:
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	case c.MaxHeaderBytes < 0:
		c.MaxHeaderBytes = http.DefaultMaxHeaderBytes
	}
	if c.headTimeout == 0 {
		c.headTimeout = connReadHeaderTimeout
	}
	if c.BodyTimeout == 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.HeaderTimeout == 0 {
		c.HeaderTimeout = transport.DefaultHeaderTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = transport.DefaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Guard.MaxOpenFor == 0 {
		c.Guard.MaxOpenFor = DefaultGuardMaxOpenFor
	}
	if c.Guard.TrialWait == 0 {
		c.Guard.TrialWait = DefaultGuardTrialWait
	}
	return c
}
