package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server"
)

// Defaults of `hostguard serve` with no flags.
const (
	defaultListen      = "127.0.0.1:7411"
	defaultProxyListen = "127.0.0.1:7412"
)

// serveOptions is the parsed command line of serve.
type serveOptions struct {
	listen, proxyListen, db, token string
	allowPrivate                   bool
	logFormat, logLevel            string
	guardThreshold                 int
	guardWindow, guardOpenFor      time.Duration
	headerTimeout, idleTimeout     time.Duration
	ticketLease, shutdownTimeout   time.Duration
	budgetSources                  []budget.Source
	// config is the configuration file's path ("" for none), file its
	// checked contents.
	config string
	file   *daemonConfig
}

// parseBudgetSource reads NAME[:DAILY_LIMIT[:SHARE]], e.g.
// "indexer.example:1000:gentle".
func parseBudgetSource(v string) (budget.Source, error) {
	parts := strings.Split(v, ":")
	if len(parts) > 3 || strings.TrimSpace(parts[0]) == "" {
		return budget.Source{}, fmt.Errorf("budget source %q: want NAME[:DAILY_LIMIT[:SHARE]]", v)
	}
	src := budget.Source{Name: strings.TrimSpace(parts[0])}
	if len(parts) > 1 && parts[1] != "" {
		n, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil || n < 0 {
			return budget.Source{}, fmt.Errorf("budget source %q: daily limit %q is not a whole number", v, parts[1])
		}
		src.OwnerDailyLimit = budget.Int(n)
	}
	if len(parts) > 2 {
		sh, err := budget.ParseShare(parts[2])
		if err != nil {
			return budget.Source{}, fmt.Errorf("budget source %q: share %q: want gentle, normal or unlimited", v, parts[2])
		}
		src.Share = sh
	}
	return src, nil
}

// envDefaults reads HOSTGUARD_* variables into flag defaults. A variable
// that does not parse is a usage error naming the variable, not a silent
// fallback to the built-in default.
type envDefaults struct{ errs []string }

func (e *envDefaults) str(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

func (e *envDefaults) boolean(key string, def bool) bool {
	v, ok := os.LookupEnv(key)
	if !ok || v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%q is not true or false", key, v))
		return def
	}
	return b
}

func (e *envDefaults) integer(key string, def int) int {
	v, ok := os.LookupEnv(key)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%q is not a whole number", key, v))
		return def
	}
	return n
}

func (e *envDefaults) duration(key string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(key)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%q is not a duration such as 30s or 2m", key, v))
		return def
	}
	return d
}

func serveFlagSet(o *serveOptions, env *envDefaults, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("hostguard serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.config, "config", env.str("HOSTGUARD_CONFIG", ""),
		"JSON configuration `file`: budget sources and allowances, feeds, evidence, and any setting below (env HOSTGUARD_CONFIG; docs/config.md). Flags and HOSTGUARD_* variables override it")
	fs.StringVar(&o.listen, "listen", env.str("HOSTGUARD_LISTEN", defaultListen),
		"`address` of the JSON API, status page and metrics (env HOSTGUARD_LISTEN)")
	fs.StringVar(&o.proxyListen, "proxy-listen", env.str("HOSTGUARD_PROXY_LISTEN", defaultProxyListen),
		"`address` of the forward proxy; empty turns the proxy off (env HOSTGUARD_PROXY_LISTEN)")
	fs.StringVar(&o.db, "db", env.str("HOSTGUARD_DB", ""),
		"store: an SQLite file `path` or postgres://user@host/db (env HOSTGUARD_DB; default $XDG_STATE_HOME/hostguard/hostguard.db, else ~/.local/state/hostguard/hostguard.db)")
	fs.StringVar(&o.token, "token", env.str("HOSTGUARD_TOKEN", ""),
		"bearer `token` required on every route but /healthz, and by the proxy; needed to listen beyond loopback (env HOSTGUARD_TOKEN, which keeps it out of the process list)")
	fs.BoolVar(&o.allowPrivate, "allow-private", env.boolean("HOSTGUARD_ALLOW_PRIVATE", false),
		"let fetch and the proxy reach loopback, private and link-local addresses (env HOSTGUARD_ALLOW_PRIVATE)")
	fs.StringVar(&o.logFormat, "log-format", env.str("HOSTGUARD_LOG_FORMAT", "text"),
		"log `format` on stderr: text or json (env HOSTGUARD_LOG_FORMAT)")
	fs.StringVar(&o.logLevel, "log-level", env.str("HOSTGUARD_LOG_LEVEL", "info"),
		"least `level` logged: debug, info, warn or error (env HOSTGUARD_LOG_LEVEL)")
	fs.IntVar(&o.guardThreshold, "guard-threshold", env.integer("HOSTGUARD_GUARD_THRESHOLD", 2),
		"host-level failures within the window that open an endpoint (env HOSTGUARD_GUARD_THRESHOLD)")
	fs.DurationVar(&o.guardWindow, "guard-window", env.duration("HOSTGUARD_GUARD_WINDOW", 120*time.Second),
		"window in which failures count towards the threshold (env HOSTGUARD_GUARD_WINDOW)")
	fs.DurationVar(&o.guardOpenFor, "guard-open-for", env.duration("HOSTGUARD_GUARD_OPEN_FOR", 30*time.Second),
		"how long an open endpoint fails fast before one trial request (env HOSTGUARD_GUARD_OPEN_FOR)")
	fs.DurationVar(&o.headerTimeout, "header-timeout", env.duration("HOSTGUARD_HEADER_TIMEOUT", 30*time.Second),
		"wait for an upstream's response headers (and a tunnel target's first byte) before it counts as not answering (env HOSTGUARD_HEADER_TIMEOUT)")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", env.duration("HOSTGUARD_IDLE_TIMEOUT", 30*time.Second),
		"longest stall of an upstream body; a body that keeps arriving is never cut (env HOSTGUARD_IDLE_TIMEOUT)")
	fs.DurationVar(&o.ticketLease, "ticket-lease", env.duration("HOSTGUARD_TICKET_LEASE", server.DefaultTicketLease),
		"how long a ticket from /v1/guard/acquire may stay unreported before it is released as inconclusive (env HOSTGUARD_TICKET_LEASE)")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", env.duration("HOSTGUARD_SHUTDOWN_TIMEOUT", server.DefaultShutdownTimeout),
		"on SIGINT or SIGTERM, how long in-flight requests and tunnels may finish before they are cut (env HOSTGUARD_SHUTDOWN_TIMEOUT)")
	if v := env.str("HOSTGUARD_BUDGET_SOURCES", ""); v != "" {
		for _, one := range strings.Split(v, ",") {
			src, err := parseBudgetSource(strings.TrimSpace(one))
			if err != nil {
				env.errs = append(env.errs, "HOSTGUARD_BUDGET_SOURCES: "+err.Error())
				continue
			}
			o.budgetSources = append(o.budgetSources, src)
		}
	}
	fromEnv := true
	fs.Func("budget-source", "a source whose background requests the budget admits, as `NAME[:DAILY_LIMIT[:SHARE]]` (share gentle, normal or unlimited); repeatable (env HOSTGUARD_BUDGET_SOURCES, comma-separated)", func(v string) error {
		if fromEnv { // the command line replaces the environment's list
			o.budgetSources, fromEnv = nil, false
		}
		src, err := parseBudgetSource(v)
		if err != nil {
			return err
		}
		o.budgetSources = append(o.budgetSources, src)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: hostguard serve [flags]

Runs the daemon. With no flags it serves the API on 127.0.0.1:7411 and the
forward proxy on 127.0.0.1:7412, and keeps its state in an SQLite file in
the user's state directory. Every flag can also be set by the environment
variable named with it.

--config FILE reads a JSON file (docs/config.md) that can hold every
setting below but the token, plus what only the file configures: the
budget's allowances, feeds to follow (Newznab or Torznab indexers, whose
API keys are best given by api_key_env), evidence and leader election.
Precedence: a flag on the command line, then its HOSTGUARD_* variable,
then the file, then the built-in default. --budget-source (and
HOSTGUARD_BUDGET_SOURCES) add to the file's budget sources; one of the
same name replaces the file's.

The file's budget is the base; changes made while running (hostguard
budget set-source|remove-source|pause|resume) are stored, apply to every
node sharing the store, and outlive restarts until removed.

Routes: GET /healthz, GET /metrics, GET / (status page), and the JSON API
under /v1 (docs/api.md). Point HTTP_PROXY and HTTPS_PROXY at the proxy to
guard any HTTP client.

Stop it with SIGINT or SIGTERM: it stops accepting, lets in-flight work
finish (see -shutdown-timeout), releases guard tickets and closes the store.

flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

func (o *serveOptions) validate() error {
	switch {
	case o.listen == "":
		return errors.New("--listen is empty")
	case o.logFormat != "text" && o.logFormat != "json":
		return fmt.Errorf("--log-format %q: want text or json", o.logFormat)
	case o.guardThreshold < 1:
		return fmt.Errorf("--guard-threshold %d: want 1 or more", o.guardThreshold)
	case o.guardWindow <= 0:
		return fmt.Errorf("--guard-window %v: want a positive duration", o.guardWindow)
	case o.guardOpenFor <= 0:
		return fmt.Errorf("--guard-open-for %v: want a positive duration", o.guardOpenFor)
	case o.headerTimeout <= 0:
		return fmt.Errorf("--header-timeout %v: want a positive duration", o.headerTimeout)
	case o.idleTimeout <= 0:
		return fmt.Errorf("--idle-timeout %v: want a positive duration", o.idleTimeout)
	case o.ticketLease <= 0:
		return fmt.Errorf("--ticket-lease %v: want a positive duration", o.ticketLease)
	case o.shutdownTimeout <= 0:
		return fmt.Errorf("--shutdown-timeout %v: want a positive duration", o.shutdownTimeout)
	}
	if _, err := parseLevel(o.logLevel); err != nil {
		return err
	}
	if err := server.CheckListen(o.listen, o.token); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "server: "))
	}
	if o.proxyListen != "" {
		if err := server.CheckListen(o.proxyListen, o.token); err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "server: ") + " (for --proxy-listen)")
		}
	}
	return nil
}

// envGiven reports whether the environment sets flag name, so that it
// wins over the configuration file. An empty variable does not count,
// except for the proxy's address, where empty turns the proxy off.
func envGiven(name string) bool {
	v, ok := os.LookupEnv("HOSTGUARD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")))
	return ok && (v != "" || name == "proxy-listen")
}

// applyFile takes every setting of c that neither a flag nor the
// environment gave (given says which did).
func (o *serveOptions) applyFile(c *daemonConfig, given func(flag string) bool) {
	o.file = c
	str := func(name string, dst *string, v *string) {
		if v != nil && !given(name) {
			*dst = *v
		}
	}
	dur := func(name string, dst *time.Duration, v *time.Duration) {
		if v != nil && !given(name) {
			*dst = *v
		}
	}
	str("listen", &o.listen, c.listen)
	str("proxy-listen", &o.proxyListen, c.proxyListen)
	str("db", &o.db, c.db)
	str("log-format", &o.logFormat, c.logFormat)
	str("log-level", &o.logLevel, c.logLevel)
	if c.allowPrivate != nil && !given("allow-private") {
		o.allowPrivate = *c.allowPrivate
	}
	if c.guardThreshold != nil && !given("guard-threshold") {
		o.guardThreshold = *c.guardThreshold
	}
	dur("guard-window", &o.guardWindow, c.guardWindow)
	dur("guard-open-for", &o.guardOpenFor, c.guardOpenFor)
	dur("header-timeout", &o.headerTimeout, c.headerTimeout)
	dur("idle-timeout", &o.idleTimeout, c.idleTimeout)
	dur("ticket-lease", &o.ticketLease, c.ticketLease)
	dur("shutdown-timeout", &o.shutdownTimeout, c.shutdownTimeout)

	// Sources from flags or the environment join the file's, replacing
	// one of the same name.
	merged := append([]budget.Source(nil), c.budget.Sources...)
	for _, src := range o.budgetSources {
		replaced := false
		for i := range merged {
			if merged[i].Name == src.Name {
				merged[i], replaced = src, true
			}
		}
		if !replaced {
			merged = append(merged, src)
		}
	}
	o.budgetSources = merged
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func runServe(args []string, _, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args, stderr)
}

// serve runs the daemon until ctx ends. Tests call it directly with a
// context they cancel.
func serve(ctx context.Context, args []string, stderr io.Writer) int {
	var o serveOptions
	env := &envDefaults{}
	fs := serveFlagSet(&o, env, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, "unexpected argument %q", fs.Arg(0))
	}
	if len(env.errs) > 0 {
		return usageError(stderr, fs, "%s", strings.Join(env.errs, "; "))
	}
	if o.config != "" {
		c, err := loadConfig(o.config)
		if err != nil {
			fmt.Fprintf(stderr, "hostguard serve: %v\n", err)
			return ExitUsage
		}
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		o.applyFile(c, func(name string) bool { return given[name] || envGiven(name) })
	}
	if err := o.validate(); err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	level, _ := parseLevel(o.logLevel)
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if o.logFormat == "json" {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(h)
	if err := runDaemon(ctx, &o, log); err != nil {
		log.Error("hostguard serve: " + err.Error())
		return ExitError
	}
	return ExitOK
}

func runDaemon(ctx context.Context, o *serveOptions, log *slog.Logger) error {
	dsn := o.db
	if dsn == "" {
		p, err := defaultDBPath()
		if err != nil {
			return err
		}
		dsn = p
	}
	kind, _, err := hostguard.ParseDSN(dsn)
	if err != nil {
		return err
	}
	st, err := hostguard.Open(ctx, dsn)
	if err != nil {
		return fmt.Errorf("opening the %s store: %w", kind, err)
	}
	defer st.Close()

	file := o.file
	if file == nil {
		file = &daemonConfig{}
	}
	if file.looseKey {
		log.Warn("hostguard: the configuration file holds an API key and others may read it; use api_key_env, or chmod 600 the file", "config", o.config)
	}
	tracker, err := health.New(st, health.Config{Logger: log})
	if err != nil {
		return err
	}
	sched, err := retry.New(st, retry.Config{})
	if err != nil {
		return err
	}
	bcfg := file.budget
	bcfg.Sources = o.budgetSources
	bud, err := budget.New(st, bcfg)
	if err != nil {
		return err
	}
	el, err := leader.New(st, leader.Config{LeaseFor: file.leaderLease, Logger: log})
	if err != nil {
		return err
	}
	ecfg := file.evidence
	ecfg.Logger = log
	book, err := evidence.New(st, ecfg)
	if err != nil {
		return err
	}
	// Deferred after the store's Close, so it runs first.
	defer book.Close()
	srv, err := server.New(server.Config{
		Budget:        bud,
		Elector:       el,
		Feeds:         file.feeds,
		FeedStore:     st,
		Evidence:      book,
		MaintainEvery: file.maintainEvery,
		Token:         o.token,
		AllowPrivate:  o.allowPrivate,
		Guard: guard.Config{
			Threshold: o.guardThreshold,
			Window:    o.guardWindow,
			OpenFor:   o.guardOpenFor,
		},
		HeaderTimeout:   o.headerTimeout,
		IdleTimeout:     o.idleTimeout,
		TicketLease:     o.ticketLease,
		ShutdownTimeout: o.shutdownTimeout,
		Health:          tracker,
		Retry:           sched,
		Logger:          log,
	})
	if err != nil {
		return err
	}
	api, err := net.Listen("tcp", o.listen)
	if err != nil {
		srv.Close()
		return fmt.Errorf("listening for the API: %w", err)
	}
	var proxy net.Listener
	proxyAddr := "off"
	if o.proxyListen != "" {
		if proxy, err = net.Listen("tcp", o.proxyListen); err != nil {
			api.Close()
			srv.Close()
			return fmt.Errorf("listening for the proxy: %w", err)
		}
		proxyAddr = proxy.Addr().String()
	}
	log.Info("hostguard: listening", "api", api.Addr().String(), "proxy", proxyAddr,
		"store", kind, "auth", o.token != "", "allow_private", o.allowPrivate, "config", o.config,
		"feeds", len(file.feeds), "budget_sources", len(o.budgetSources), "node", el.NodeID(), "version", version())
	return srv.Serve(ctx, api, proxy)
}

// defaultDBPath is the SQLite file in the user's state directory
// ($XDG_STATE_HOME, else ~/.local/state), whose folder is created private
// to the user: the queue's payloads may be nobody else's business.
func defaultDBPath() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("no --db given and no home directory to keep state in; pass --db PATH")
		}
		base = filepath.Join(home, ".local", "state")
	}
	dir := filepath.Join(base, "hostguard")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the state directory: %w", err)
	}
	return filepath.Join(dir, "hostguard.db"), nil
}
