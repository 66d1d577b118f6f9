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

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/internal/schemaset"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/sqlite"
)

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
		src.OwnerDailyLimit = new(n)
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

// serveFlags binds serve's flags to s: every option of the table, and the
// three that are not settings of a library.
func serveFlags(s *settings, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("hostguard serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s.bind(fs)
	fs.StringVar(&s.config, "config", "",
		"JSON configuration `file`: budget sources and allowances, feeds, evidence, and any setting below (env HOSTGUARD_CONFIG; docs/config.md). Flags and HOSTGUARD_* variables override it")
	fs.StringVar(&s.server.Token, "token", "",
		"bearer `token` required on every route but /healthz, and by the proxy; needed to listen beyond loopback (env HOSTGUARD_TOKEN, which keeps it out of the process list)")
	fs.Func("budget-source", "a source whose background requests the budget admits, as `NAME[:DAILY_LIMIT[:SHARE]]` (share gentle, normal or unlimited); repeatable (env HOSTGUARD_BUDGET_SOURCES, comma-separated)", func(v string) error {
		src, err := parseBudgetSource(v)
		if err != nil {
			return err
		}
		s.cliSources, s.cliSourcesFrom = append(s.cliSources, src), "--budget-source"
		return nil
	})
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: hostguard serve [flags]

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

// parseServe reads serve's settings: the file, then the HOSTGUARD_*
// variables over it, then the command line over both. It returns an exit
// code when the command should stop.
func parseServe(args []string, stderr io.Writer) (*settings, int, bool) {
	s := newSettings()
	fs := serveFlags(s, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, ExitOK, true
		}
		return nil, ExitUsage, true
	}
	if fs.NArg() > 0 {
		return nil, usageError(stderr, fs, "unexpected argument %q", fs.Arg(0)), true
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	config := s.config
	if !given["config"] {
		config = os.Getenv("HOSTGUARD_CONFIG")
	}

	// The first parse found the file; start again from the defaults so
	// that the file goes under the variables and the command line.
	s = newSettings()
	fs = serveFlags(s, stderr)
	if s.config = config; config != "" {
		if err := s.loadFile(os.LookupEnv); err != nil {
			fmt.Fprintf(stderr, "hostguard serve: %v\n", err)
			return nil, ExitUsage, true
		}
	}
	if err := s.applyEnv(fs, given); err != nil {
		return nil, usageError(stderr, fs, "%v", err), true
	}
	if err := fs.Parse(args); err != nil {
		return nil, ExitUsage, true
	}
	for name := range given {
		s.mark(name, fromFlag)
	}
	s.mergeSources()
	if err := s.validate(); err != nil {
		return nil, usageError(stderr, fs, "%v", err), true
	}
	if err := s.checkConfigMode(); err != nil {
		fmt.Fprintf(stderr, "hostguard serve: %v\n", err)
		return nil, ExitUsage, true
	}
	return s, 0, false
}

// validateOwn checks the settings that belong to the binary.
func (s *settings) validateOwn() error {
	switch {
	case s.listen == "":
		return s.named("listen", "is empty")
	case s.logFormat != "text" && s.logFormat != "json":
		return s.named("log_format", fmt.Sprintf("%q: want text or json", s.logFormat))
	case s.from["db"] != "" && strings.TrimSpace(s.db) == "":
		return s.named("db", "is empty; leave it out for the default file")
	}
	if _, err := parseLevel(s.logLevel); err != nil {
		return s.named("log_level", fmt.Sprintf("%q: want debug, info, warn or error", s.logLevel))
	}
	if err := server.CheckListen(s.listen, s.server.Token); err != nil {
		return s.named("listen", err.Error())
	}
	if s.proxyListen != "" {
		if err := server.CheckListen(s.proxyListen, s.server.Token); err != nil {
			return s.named("proxy_listen", err.Error())
		}
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}
func runServe(args []string, stdout, stderr io.Writer) int {
	if helpAsked(args) {
		serveFlags(newSettings(), stdout).Usage()
		return ExitOK
	}
	tuneGC()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	return serveSignals(sigs, args, stderr)
}

// helpAsked reports whether args ask for help before any "--".
func helpAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// serve runs the daemon until ctx ends. Tests call it directly with a
// context they cancel.
func serve(ctx context.Context, args []string, stderr io.Writer) int {
	return serveWith(ctx, args, stderr, nil)
}

// serveWith is serve with a reload on every receive from hup.
func serveWith(ctx context.Context, args []string, stderr io.Writer, hup <-chan struct{}) int {
	s, code, stop := parseServe(args, stderr)
	if stop {
		return code
	}
	level := new(slog.LevelVar)
	l, _ := parseLevel(s.logLevel)
	level.Set(l)
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if s.logFormat == "json" {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(h)
	rl := &reloader{args: args, stderr: stderr, log: log, level: level, cur: s, warned: map[string]bool{}}
	if s.stdinExit {
		// The kernel closes a pipe's last writer however its holder ends,
		// so a daemon started by a program with a pipe on its stdin never
		// outlives that program. The reader stays blocked until the
		// process exits; only the binary sets this.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			log.Info("hostguard: standard input closed; stopping (--exit-with-stdin)")
			cancel()
		}()
	}
	if err := runDaemon(ctx, s, log, hup, rl); err != nil {
		log.Error("hostguard serve: " + err.Error())
		return ExitError
	}
	return ExitOK
}

// runDaemon opens the store, builds the libraries from s and serves until
// ctx ends.
func runDaemon(ctx context.Context, s *settings, log *slog.Logger, hup <-chan struct{}, rl *reloader) error {
	for _, w := range []string{s.dbPasswordWarning(), s.tokenWarning()} {
		if w != "" {
			log.Warn(w)
		}
	}
	st, kind, closeStore, err := openStore(ctx, s)
	if err != nil {
		return err
	}
	defer closeStore()
	if s.looseKey {
		log.Warn("hostguard: the configuration file holds an API key and others may read it; use api_key_env, or chmod 600 the file", "config", s.config)
	}
	cfg, closeBook, err := serverConfig(ctx, s, st, kind, log)
	if err != nil {
		return err
	}
	// Deferred after the store's Close, so it runs first.
	defer closeBook()
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	api, proxy, err := listen(s)
	if err != nil {
		srv.Close()
		return err
	}
	proxyAddr := "off"
	if proxy != nil {
		proxyAddr = proxy.Addr().String()
	}
	log.Info("hostguard: listening", "api", api.Addr().String(), "proxy", proxyAddr,
		"store", kind, "auth", cfg.Token != "", "allow_private", cfg.AllowPrivate, "config", s.config,
		"feeds", len(cfg.Feeds), "budget_sources", len(s.budget.Sources), "node", cfg.Elector.NodeID(), "version", version())
	if hup != nil {
		rl.budget = cfg.Budget
		rl.server = srv
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-hup:
					rl.reload(ctx)
				}
			}
		}()
	}
	return srv.Serve(ctx, api, proxy)
}

// openStore opens the store s names (the default SQLite file when none),
// holding a SQLite file's lock for as long as it is open. closeStore
// closes the store, then lets the lock go.
func openStore(ctx context.Context, s *settings) (st hostguard.Store, kind string, closeStore func(), err error) {
	dsn := s.db
	if dsn == "" {
		if dsn, err = defaultDBPath(); err != nil {
			return nil, "", nil, err
		}
	}
	kind, target, err := hostguard.ParseDSN(dsn)
	if err != nil {
		return nil, "", nil, err
	}
	release := func() {}
	if kind == "sqlite" {
		lock, err := sqlite.Lock(target)
		if err != nil {
			return nil, "", nil, err
		}
		release = func() { lock.Release() }
	}
	if kind == "postgres" {
		var pg *postgres.Store
		if pg, err = postgres.OpenConfig(ctx, target, postgres.Config{Timeout: s.dbTimeout}); err == nil {
			st = pg
		}
	} else {
		var lite *sqlite.Store
		if lite, err = sqlite.OpenConfig(ctx, target, sqlite.Config{Timeout: s.dbTimeout}); err == nil {
			st = lite
		}
	}
	if err != nil {
		release()
		return nil, "", nil, fmt.Errorf("opening the %s store: %w", kind, err)
	}
	return st, kind, func() { st.Close(); release() }, nil
}

// serverConfig builds the libraries from s on st, into the server's
// configuration. closeBook closes the evidence book it opened.
func serverConfig(ctx context.Context, s *settings, st hostguard.Store, kind string, log *slog.Logger) (cfg server.Config, closeBook func(), err error) {
	cfg = s.server
	cfg.Logger = log
	cfg.FeedStore = st
	cfg.ShareStore, _ = st.(guard.ShareStore)
	if cfg.Ready, err = readiness(ctx, st); err != nil {
		return cfg, nil, err
	}
	if cfg.Health, err = health.New(st, health.Config{Logger: log}); err != nil {
		return cfg, nil, err
	}
	if cfg.Retry, err = retry.New(st, s.retry); err != nil {
		return cfg, nil, err
	}
	if cfg.Budget, err = budget.New(st, s.budget); err != nil {
		return cfg, nil, err
	}
	logOverrides(ctx, log, cfg.Budget)
	lcfg := s.leader
	lcfg.Logger = log
	if cfg.Elector, err = leader.New(st, lcfg); err != nil {
		return cfg, nil, err
	}
	ecfg := s.evidence
	ecfg.Logger = log
	book, err := evidence.New(st, ecfg)
	if err != nil {
		return cfg, nil, err
	}
	cfg.Evidence = book
	cfg.Version = version()
	cfg.StoreKind = kind
	return cfg, func() { book.Close() }, nil
}

// listen opens the API's listener and, unless it is off, the proxy's.
func listen(s *settings) (api, proxy net.Listener, err error) {
	if api, err = net.Listen("tcp", s.listen); err != nil {
		return nil, nil, fmt.Errorf("listening for the API: %w", err)
	}
	if s.proxyListen != "" {
		if proxy, err = net.Listen("tcp", s.proxyListen); err != nil {
			api.Close()
			return nil, nil, fmt.Errorf("listening for the proxy: %w", err)
		}
	}
	return api, proxy, nil
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

// readiness checks, for /readyz, that the store answers with the schema
// this daemon migrated it to: the same set of applied versions. A newer
// binary that migrated it further (even with a version below this one's
// newest: each capability numbers its own range), or a restore of an
// older database, makes this daemon not ready.
func readiness(ctx context.Context, st hostguard.Store) (func(context.Context) error, error) {
	sv, ok := st.(interface {
		SchemaVersions(context.Context) ([]int, error)
	})
	if !ok {
		return nil, nil
	}
	want, err := sv.SchemaVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the schema versions: %w", err)
	}
	return func(ctx context.Context) error {
		if df, ok := st.(interface{ DiskFull() bool }); ok && df.DiskFull() {
			return errors.New("the disk is full: writes wait for room to move the WAL into the database")
		}
		got, err := sv.SchemaVersions(ctx)
		if err != nil {
			return errors.New("the store does not answer")
		}
		switch extra, missing := schemaset.Diff(want, got); {
		case len(extra) > 0:
			return fmt.Errorf("the schema has moved past this daemon: versions %s were applied by a newer hostguard (this one knows %s)",
				schemaset.String(extra), schemaset.String(want))
		case len(missing) > 0:
			return fmt.Errorf("the schema lacks versions %s that this daemon runs on (%s): the database was replaced or restored",
				schemaset.String(missing), schemaset.String(want))
		}
		return nil
	}, nil
}
