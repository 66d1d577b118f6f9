package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/transport"
)

// Defaults of `hostguard serve` that belong to the binary, not a library.
const (
	defaultListen      = "127.0.0.1:7411"
	defaultProxyListen = "127.0.0.1:7412"
)

// settings is what `hostguard serve` runs with. Flags, their HOSTGUARD_*
// variables and the configuration file all write straight into the
// libraries' own configurations held here: the libraries own every default
// and every rule, and validate asks them once.
type settings struct {
	config      string // the configuration file's path; "" for none
	listen      string
	proxyListen string
	db          string
	logFormat   string
	logLevel    string
	// stdinExit stops the daemon when its standard input reaches its end.
	stdinExit bool

	server   server.Config
	budget   budget.Config
	evidence evidence.Config
	leader   leader.Config
	retry    retry.Config
	// dbTimeout is the store's timeout, postgres.Config.Timeout or
	// sqlite.Config.Timeout as --db names one or the other (their
	// defaults are equal, TestDBTimeoutReachesTheStore checks).
	dbTimeout time.Duration

	// cliSources are the sources of --budget-source, or of
	// HOSTGUARD_BUDGET_SOURCES when no flag gives any (cliSourcesFrom names
	// which). They join the file's budget.sources, replacing one of the
	// same name.
	cliSources     []budget.Source
	cliSourcesFrom string

	// inlineKey is true when some feed's key is written in the file;
	// looseKey when, moreover, others may read the file.
	inlineKey, looseKey bool
	// configMode is the configuration file's permissions as read;
	// acceptWritableConfig lets the daemon start even when its group or
	// others may write it (see checkConfigMode).
	configMode           os.FileMode
	acceptWritableConfig bool

	// from says where each option's value came from, by option name:
	// fromFlag, fromEnv or fromFile; absent for the default.
	from map[string]string
	// sourceFrom names, by index in budget.Sources, the sources that came
	// from the command line or the environment.
	sourceFrom map[int]string
}

const (
	fromFlag = "flag"
	fromEnv  = "env"
	fromFile = "file"
)

// option is one setting of serve. Its name is its place in the
// configuration file (guard.threshold); unless fileOnly, the same name is
// the flag --guard-threshold and the variable HOSTGUARD_GUARD_THRESHOLD.
// Adding a setting is one row here, its field in the library and its line
// in docs/config.md.
type option struct {
	name  string
	field func(*settings) any // the library field the setting fills
	// def is the flag's default for --help: a library's Default constant,
	// or the binary's own. nil leaves the field's zero value, which the
	// library reads as its default.
	def any
	// usage is the flag's help; $ENV stands for its variable, else
	// " (env HOSTGUARD_…)" is appended.
	usage    string
	fileOnly bool
}

var options = []option{
	{name: "listen", field: func(s *settings) any { return &s.listen }, def: defaultListen,
		usage: "`address` of the JSON API, status page and metrics"},
	{name: "proxy_listen", field: func(s *settings) any { return &s.proxyListen }, def: defaultProxyListen,
		usage: "`address` of the forward proxy; empty turns the proxy off"},
	{name: "db", field: func(s *settings) any { return &s.db },
		usage: "store: an SQLite file `path` or postgres://user@host/db (env $ENV; default $XDG_STATE_HOME/hostguard/hostguard.db, else ~/.local/state/hostguard/hostguard.db)"},
	{name: "db_timeout", field: func(s *settings) any { return &s.dbTimeout }, def: postgres.DefaultTimeout,
		usage: "longest wait for the store: a PostgreSQL statement or connection; an SQLite write's turn at the writer, or another process's lock on the file; past it the request is answered 503; negative for none"},
	{name: "allow_private", field: func(s *settings) any { return &s.server.AllowPrivate },
		usage: "let fetch and the proxy reach loopback, private and link-local addresses"},
	{name: "accept_writable_config", field: func(s *settings) any { return &s.acceptWritableConfig },
		usage: "start even when the configuration file is writable by its group or others, who could then change what the daemon allows; never read from the file itself"},
	{name: "allowed_hosts", field: func(s *settings) any { return &s.server.AllowedHosts },
		usage: "comma-separated `names` the API answers to in the Host header, beyond loopback and the listen address"},
	{name: "max_conns", field: func(s *settings) any { return &s.server.MaxConns }, def: server.DefaultMaxConns,
		usage: "most client connections open at once on each listener; more are answered 503; negative for no cap"},
	{name: "max_header_bytes", field: func(s *settings) any { return &s.server.MaxHeaderBytes }, def: server.DefaultMaxHeaderBytes,
		usage: "most bytes of a request head (request line and headers) on each listener; more are answered 431; negative for net/http's own 1 MiB"},
	{name: "body_timeout", field: func(s *settings) any { return &s.server.BodyTimeout }, def: server.DefaultBodyTimeout,
		usage: "most time a client may take to send its request and read a JSON answer; negative for none"},
	{name: "log_format", field: func(s *settings) any { return &s.logFormat }, def: "text",
		usage: "log `format` on stderr: text or json"},
	{name: "log_level", field: func(s *settings) any { return &s.logLevel }, def: "info",
		usage: "least `level` logged: debug, info, warn or error"},
	{name: "exit_with_stdin", field: func(s *settings) any { return &s.stdinExit },
		usage: "stop gracefully when standard input closes, as it does when the program that started the daemon with a pipe there exits, even by kill -9"},
	{name: "guard.threshold", field: func(s *settings) any { return &s.server.Guard.Threshold }, def: guard.DefaultThreshold,
		usage: "host-level failures within the window that open an endpoint"},
	{name: "guard.window", field: func(s *settings) any { return &s.server.Guard.Window }, def: guard.DefaultWindow,
		usage: "window in which failures count towards the threshold"},
	{name: "guard.open_for", field: func(s *settings) any { return &s.server.Guard.OpenFor }, def: guard.DefaultOpenFor,
		usage: "how long an open endpoint fails fast before one trial request"},
	{name: "guard.max_endpoints", field: func(s *settings) any { return &s.server.Guard.MaxEndpoints }, def: guard.DefaultMaxEndpoints,
		usage: "most endpoint records the guard keeps in memory"},
	{name: "guard.max_open_for", field: func(s *settings) any { return &s.server.Guard.MaxOpenFor }, def: server.DefaultGuardMaxOpenFor,
		usage: "longest an open period grows to while a host stays down; negative: every period lasts open_for"},
	{name: "guard.trial_wait", field: func(s *settings) any { return &s.server.Guard.TrialWait }, def: server.DefaultGuardTrialWait,
		usage: "most a request waits for the outcome of an endpoint's one half-open trial, instead of being refused at once (it waits what the host needs to answer, up to this); negative: refused at once"},
	{name: "guard.max_probes", field: func(s *settings) any { return &s.server.Guard.MaxProbes }, def: guard.DefaultMaxProbes,
		usage: "recovery probes running at once; negative: no probes, the first request after an open period is the trial"},
	{name: "guard.share", field: func(s *settings) any { return &s.server.GuardShare }, def: server.DefaultGuardShare,
		usage: "share guard verdicts with the other nodes on the store: auto (on PostgreSQL, not SQLite), on or off"},
	{name: "retry.wake_jitter", field: func(s *settings) any { return &s.retry.WakeJitter }, def: retry.DefaultWakeJitter,
		usage: "spread of the items a host's recovery makes due (a successful touch, or its guard endpoint closing on an answer); negative: all due at once"},
	{name: "guard.wait_floor", field: func(s *settings) any { return &s.server.Guard.WaitFloor }, def: guard.DefaultWaitFloor,
		usage: "a client that gives up (or whose Hostguard-Timeout runs out) counts as the host not answering only after the host owed its answer longer than this and 4× what it recently needed; negative: give-ups never count"},
	{name: "header_timeout", field: func(s *settings) any { return &s.server.HeaderTimeout }, def: transport.DefaultHeaderTimeout,
		usage: "wait for an upstream's response headers (and a tunnel target's first byte) before it counts as not answering"},
	{name: "idle_timeout", field: func(s *settings) any { return &s.server.IdleTimeout }, def: transport.DefaultIdleTimeout,
		usage: "longest stall of an upstream body; a body that keeps arriving is never cut"},
	{name: "ticket_lease", field: func(s *settings) any { return &s.server.TicketLease }, def: server.DefaultTicketLease,
		usage: "how long a ticket from /v1/guard/acquire may stay unreported before it is released as inconclusive"},
	{name: "shutdown_timeout", field: func(s *settings) any { return &s.server.ShutdownTimeout }, def: server.DefaultShutdownTimeout,
		usage: "on SIGINT or SIGTERM, how long in-flight requests and tunnels may finish before they are cut"},
	{name: "maintain_every", field: func(s *settings) any { return &s.server.MaintainEvery }, fileOnly: true},
	{name: "leader.lease", field: func(s *settings) any { return &s.leader.LeaseFor }, fileOnly: true},
	{name: "budget.paused", field: func(s *settings) any { return &s.budget.Paused }, fileOnly: true},
	{name: "budget.head_poll_every", field: func(s *settings) any { return &s.budget.HeadPollEvery }, fileOnly: true},
	{name: "budget.total", field: func(s *settings) any { return &s.budget.Limits.Total }, fileOnly: true},
	{name: "budget.validation", field: func(s *settings) any { return &s.budget.Limits.Validation }, fileOnly: true},
	{name: "budget.candidate", field: func(s *settings) any { return &s.budget.Limits.Candidate }, fileOnly: true},
	{name: "budget.descriptor", field: func(s *settings) any { return &s.budget.Limits.Descriptor }, fileOnly: true},
	{name: "budget.bytes", field: func(s *settings) any { return &s.budget.Limits.Bytes }, fileOnly: true},
	{name: "retry.classes", field: func(s *settings) any { return &s.retry.Classes }, fileOnly: true},
	{name: "retry.default", field: func(s *settings) any { return &s.retry.Default }, fileOnly: true},
	{name: "retry.reactivate_within", field: func(s *settings) any { return &s.retry.ReactivateWithin }, fileOnly: true},
	{name: "retry.keep_done", field: func(s *settings) any { return &s.retry.KeepDone }, fileOnly: true},
	{name: "retry.sync_sightings", field: func(s *settings) any { return &s.retry.SyncSightings }, fileOnly: true},
	{name: "evidence.fingerprint", field: func(s *settings) any { return &s.evidence.Fingerprint }, fileOnly: true},
	{name: "evidence.ttl", field: func(s *settings) any { return &s.evidence.TTL }, fileOnly: true},
	{name: "evidence.negative_ttl", field: func(s *settings) any { return &s.evidence.NegativeTTL }, fileOnly: true},
	{name: "evidence.max_rows", field: func(s *settings) any { return &s.evidence.MaxRows }, fileOnly: true},
}

// flagName is the flag of option name: guard.open_for is guard-open-for.
func flagName(name string) string { return strings.NewReplacer(".", "-", "_", "-").Replace(name) }

// envName is the variable of a flag: guard-open-for is
// HOSTGUARD_GUARD_OPEN_FOR.
func envName(flag string) string {
	return "HOSTGUARD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func optionNamed(name string) *option {
	for i := range options {
		if options[i].name == name {
			return &options[i]
		}
	}
	return nil
}

// bind registers every option that has a flag on fs, writing into s.
func (s *settings) bind(fs *flag.FlagSet) {
	for _, o := range options {
		field := o.field(s)
		if o.def != nil {
			v := reflect.ValueOf(field).Elem()
			v.Set(reflect.ValueOf(o.def).Convert(v.Type()))
		}
		if o.fileOnly {
			continue
		}
		name := flagName(o.name)
		usage := o.usage
		if !strings.Contains(usage, "$ENV") {
			usage += " (env $ENV)"
		}
		bindFlag(fs, field, name, strings.ReplaceAll(usage, "$ENV", envName(name)))
	}
}

// applyEnv gives every flag that the command line did not set the value
// of its HOSTGUARD_* variable. An empty variable counts as unset, except
// for the proxy's address, where empty turns the proxy off.
func (s *settings) applyEnv(fs *flag.FlagSet, given map[string]bool) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		key := envName(f.Name)
		if f.Name == "budget-source" {
			key = "HOSTGUARD_BUDGET_SOURCES" // a list, hence the plural
		}
		v, ok := os.LookupEnv(key)
		if given[f.Name] || !ok || (v == "" && f.Name != "proxy-listen") {
			return
		}
		if f.Name == "budget-source" {
			if err := s.envSources(fs, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", key, err))
			}
			s.cliSourcesFrom = key
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q %s", key, v, wants(fs, f.Name)))
			return
		}
		s.mark(f.Name, fromEnv)
	})
	return errors.Join(errs...)
}

// envSources reads HOSTGUARD_BUDGET_SOURCES, a comma-separated list.
func (s *settings) envSources(fs *flag.FlagSet, v string) error {
	for one := range strings.SplitSeq(v, ",") {
		if err := fs.Set("budget-source", strings.TrimSpace(one)); err != nil {
			return err
		}
	}
	return nil
}

// mark records where the value of a flag came from.
func (s *settings) mark(flag, from string) {
	for _, o := range options {
		if !o.fileOnly && flagName(o.name) == flag {
			s.from[o.name] = from
		}
	}
}

// mergeSources adds the command line's budget sources to the file's.
func (s *settings) mergeSources() {
	for _, src := range s.cliSources {
		i := len(s.budget.Sources)
		for j := range s.budget.Sources {
			if s.budget.Sources[j].Name == src.Name {
				i = j
			}
		}
		if i == len(s.budget.Sources) {
			s.budget.Sources = append(s.budget.Sources, src)
		} else {
			s.budget.Sources[i] = src
		}
		s.sourceFrom[i] = s.cliSourcesFrom
	}
}

// validate checks the settings once, by asking each library, and names a
// bad setting as the user wrote it: --guard-threshold,
// HOSTGUARD_GUARD_WINDOW or, in the file, budget.sources[2].share.
func (s *settings) validate() error {
	if err := s.validateOwn(); err != nil {
		return err
	}
	for _, c := range libraryChecks {
		err := c.check(s)
		if err == nil {
			continue
		}
		if field, reason, ok := server.InputField(err); ok {
			return s.named(joinPath(c.section, field), reason)
		}
		// A library that does not yet say which field is wrong: find the
		// option whose value alone it refuses.
		for _, o := range options {
			probe := newSettings()
			copyField(o, s, probe)
			if c.check(probe) != nil {
				return s.named(o.name, err.Error())
			}
		}
		return err
	}
	return nil
}

// libraryChecks are the libraries' own validations, with the section of
// the file that their field names are relative to.
var libraryChecks = []struct {
	section string
	check   func(*settings) error
}{
	// The server checks its own fields and delegates to guard, transport
	// and each feed. It also checks that feeds are wired to a store and a
	// budget, which runDaemon does after this check: stand-ins say so.
	{"", func(s *settings) error {
		c := s.server
		if len(c.Feeds) > 0 {
			c.FeedStore, c.Budget = noFeedStore{}, new(budget.Budget)
		}
		return c.Validate()
	}},
	{"budget", func(s *settings) error { return s.budget.Validate() }},
	{"evidence", func(s *settings) error { return s.evidence.Validate() }},
	{"retry", func(s *settings) error { return s.retry.Validate() }},
	{"leader", func(s *settings) error {
		// New is leader's only check of a Config; it does not touch the
		// store.
		_, err := leader.New(noLeaderStore{}, s.leader)
		return err
	}},
}

// noLeaderStore lets leader.New check a configuration; noFeedStore stands
// for the store server.Config.Validate wants feeds wired to.
type (
	noLeaderStore struct{ leader.Store }
	noFeedStore   struct{ feed.Store }
)

// named says which setting is bad, as the user wrote it.
func (s *settings) named(path, reason string) error {
	if from, rest, ok := s.cliSource(path); ok {
		return &settingError{setting: from, reason: rest + reason}
	}
	switch s.from[path] {
	case fromFlag:
		return &settingError{setting: "--" + flagName(path), reason: reason}
	case fromEnv:
		return &settingError{setting: envName(flagName(path)), reason: reason}
	}
	return &settingError{setting: path, reason: reason, file: s.config}
}

// cliSource reports whether path lies in a budget source of the command
// line or the environment, and names that source for the message.
func (s *settings) cliSource(path string) (from, which string, ok bool) {
	rest, ok := strings.CutPrefix(path, "budget.sources[")
	if !ok {
		return "", "", false
	}
	n, field, _ := strings.Cut(rest, "]")
	i, err := strconv.Atoi(n)
	if err != nil || i >= len(s.budget.Sources) {
		return "", "", false
	}
	if from, ok = s.sourceFrom[i]; !ok {
		return "", "", false
	}
	which = fmt.Sprintf("source %q: ", s.budget.Sources[i].Name)
	if field = strings.TrimPrefix(field, "."); field != "" {
		which += field + ": "
	}
	return from, which, true
}

// settingError is a bad setting, named as the user wrote it; file is the
// configuration file the setting is in, if it is in one.
type settingError struct {
	setting, reason, file string
}

func (e *settingError) Error() string {
	msg := e.reason
	if e.setting != "" {
		msg = e.setting + ": " + msg
	}
	if e.file != "" {
		msg = "configuration " + e.file + ": " + msg
	}
	return msg
}

func joinPath(section, field string) string {
	switch {
	case section == "":
		return field
	case field == "":
		return section
	case strings.HasPrefix(field, "["):
		return section + field
	}
	return section + "." + field
}

func newSettings() *settings {
	return &settings{from: map[string]string{}, sourceFrom: map[int]string{}}
}

// copyField copies option o's value from one settings to another.
func copyField(o option, from, to *settings) {
	reflect.ValueOf(o.field(to)).Elem().Set(reflect.ValueOf(o.field(from)).Elem())
}

// bindFlag registers the flag of a library field with the flag package's
// own value types, so --help shows each flag's type and default as usual.
func bindFlag(fs *flag.FlagSet, field any, name, usage string) {
	switch p := field.(type) {
	case *string:
		fs.StringVar(p, name, *p, usage)
	case *bool:
		fs.BoolVar(p, name, *p, usage)
	case *int:
		fs.IntVar(p, name, *p, usage)
	case *time.Duration:
		fs.DurationVar(p, name, *p, usage)
	case *[]string:
		fs.Var((*listValue)(p), name, usage)
	default:
		panic(fmt.Sprintf("cli: no flag for a %T setting", field))
	}
}

// listValue is a list setting on the command line and in its variable:
// comma-separated, the whole list at once.
type listValue []string

func (l *listValue) String() string { return strings.Join(*l, ",") }
func (l *listValue) Get() any       { return []string(*l) }
func (l *listValue) Set(v string) error {
	*l = nil
	for one := range strings.SplitSeq(v, ",") {
		if one = strings.TrimSpace(one); one != "" {
			*l = append(*l, one)
		}
	}
	return nil
}

// wants says what a flag's variable must hold.
func wants(fs *flag.FlagSet, name string) string {
	switch fs.Lookup(name).Value.(flag.Getter).Get().(type) {
	case bool:
		return "is not true or false"
	case int:
		return "is not a whole number"
	case time.Duration:
		return "is not a duration such as 30s, 2m or 1h"
	}
	return "is not a valid value"
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, errors.New("is not a duration such as 30s, 2m or 1h")
	}
	return d, nil
}
