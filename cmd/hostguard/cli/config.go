package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/server"
)

// maxConfigBytes bounds the configuration file: it is read whole.
const maxConfigBytes = 1 << 20

// fileConfig is the daemon's configuration file (docs/config.md). Pointers
// tell a setting left out from one set to its zero value, so that the file
// overrides a built-in default only where it says something. Nested
// objects and list entries arrive raw and are decoded one by one, so that
// an error can name its place, such as feeds[1].url.
type fileConfig struct {
	Listen          *string           `json:"listen"`
	ProxyListen     *string           `json:"proxy_listen"`
	DB              *string           `json:"db"`
	AllowPrivate    *bool             `json:"allow_private"`
	LogFormat       *string           `json:"log_format"`
	LogLevel        *string           `json:"log_level"`
	Guard           json.RawMessage   `json:"guard"`
	HeaderTimeout   *string           `json:"header_timeout"`
	IdleTimeout     *string           `json:"idle_timeout"`
	TicketLease     *string           `json:"ticket_lease"`
	ShutdownTimeout *string           `json:"shutdown_timeout"`
	MaintainEvery   *string           `json:"maintain_every"`
	Leader          json.RawMessage   `json:"leader"`
	Budget          json.RawMessage   `json:"budget"`
	Feeds           []json.RawMessage `json:"feeds"`
	Evidence        json.RawMessage   `json:"evidence"`
}

type guardFile struct {
	Threshold *int    `json:"threshold"`
	Window    *string `json:"window"`
	OpenFor   *string `json:"open_for"`
}

type leaderFile struct {
	Lease *string `json:"lease"`
}

type budgetFile struct {
	Paused        bool              `json:"paused"`
	HeadPollEvery *string           `json:"head_poll_every"`
	Total         *int64            `json:"total"`
	Validation    *int64            `json:"validation"`
	Candidate     *int64            `json:"candidate"`
	Descriptor    *int64            `json:"descriptor"`
	Bytes         *int64            `json:"bytes"`
	Sources       []json.RawMessage `json:"sources"`
}

type sourceFile struct {
	Name               string  `json:"name"`
	OwnerDailyLimit    *int64  `json:"owner_daily_limit"`
	ReportedDailyLimit *int64  `json:"reported_daily_limit"`
	Share              string  `json:"share"`
	ReservePercent     *int64  `json:"reserve_percent"`
	Pace               *string `json:"pace"`
}

type feedFile struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	APIKey     string `json:"api_key"`
	APIKeyEnv  string `json:"api_key_env"`
	Categories []int  `json:"categories"`
	PageSize   int    `json:"page_size"`
	MaxPages   int    `json:"max_pages"`
	CatchUp    int    `json:"catch_up"`
	KeepItems  int    `json:"keep_items"`
}

type evidenceFile struct {
	Fingerprint string  `json:"fingerprint"`
	TTL         *string `json:"ttl"`
	NegativeTTL *string `json:"negative_ttl"`
	MaxRows     *int    `json:"max_rows"`
}

// daemonConfig is a configuration file, checked and resolved: API keys
// read from their environment variables, durations parsed.
type daemonConfig struct {
	// The settings that flags can override; nil where the file is silent.
	listen, proxyListen, db, logFormat, logLevel *string
	allowPrivate                                 *bool
	guardThreshold                               *int
	guardWindow, guardOpenFor                    *time.Duration
	headerTimeout, idleTimeout                   *time.Duration
	ticketLease, shutdownTimeout                 *time.Duration

	// The settings only the file has.
	maintainEvery time.Duration
	leaderLease   time.Duration
	budget        budget.Config
	feeds         []server.Feed
	evidence      evidence.Config
	// inlineKey is true when some feed's key is written in the file;
	// looseKey when, moreover, others may read the file.
	inlineKey, looseKey bool
}

// configError is a bad setting, named by its place in the file.
type configError struct {
	path, msg string
}

func (e *configError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

func errAt(path, format string, args ...any) error {
	return &configError{path: path, msg: fmt.Sprintf(format, args...)}
}

// join names a member of the object at path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// loadConfig reads and checks the configuration file at path.
func loadConfig(path string) (*daemonConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the configuration: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the configuration: %w", err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("configuration %s is larger than %d bytes", path, maxConfigBytes)
	}
	cfg, err := parseConfig(data, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", path, err)
	}
	if fi, err := f.Stat(); err == nil && cfg.inlineKey && fi.Mode().Perm()&0o077 != 0 {
		cfg.looseKey = true
	}
	return cfg, nil
}

// parseConfig checks a configuration file's bytes. getenv resolves
// api_key_env. Errors name the setting at fault and never carry an API key
// or a feed URL, which may hold credentials.
func parseConfig(data []byte, getenv func(string) (string, bool)) (*daemonConfig, error) {
	var fc fileConfig
	if err := decodeStrict(data, "", &fc, true); err != nil {
		return nil, err
	}
	c := &daemonConfig{
		listen: fc.Listen, proxyListen: fc.ProxyListen, db: fc.DB, allowPrivate: fc.AllowPrivate,
		logFormat: fc.LogFormat, logLevel: fc.LogLevel,
	}
	if v := fc.LogFormat; v != nil && *v != "text" && *v != "json" {
		return nil, errAt("log_format", "%q: want text or json", *v)
	}
	if v := fc.LogLevel; v != nil {
		if _, err := parseLevel(*v); err != nil {
			return nil, errAt("log_level", "%q: want debug, info, warn or error", *v)
		}
	}
	if v := fc.DB; v != nil && strings.TrimSpace(*v) == "" {
		return nil, errAt("db", "is empty; leave it out for the default file")
	}
	var err error
	for _, d := range []struct {
		name string
		in   *string
		out  **time.Duration
	}{
		{"header_timeout", fc.HeaderTimeout, &c.headerTimeout},
		{"idle_timeout", fc.IdleTimeout, &c.idleTimeout},
		{"ticket_lease", fc.TicketLease, &c.ticketLease},
		{"shutdown_timeout", fc.ShutdownTimeout, &c.shutdownTimeout},
	} {
		if *d.out, err = positiveDuration(d.name, d.in); err != nil {
			return nil, err
		}
	}
	if m, err := positiveDuration("maintain_every", fc.MaintainEvery); err != nil {
		return nil, err
	} else if m != nil {
		c.maintainEvery = *m
	}
	if err := c.parseGuard(fc.Guard); err != nil {
		return nil, err
	}
	if err := c.parseLeader(fc.Leader); err != nil {
		return nil, err
	}
	if err := c.parseBudget(fc.Budget); err != nil {
		return nil, err
	}
	if err := c.parseFeeds(fc.Feeds, getenv); err != nil {
		return nil, err
	}
	if err := c.parseEvidence(fc.Evidence); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *daemonConfig) parseGuard(raw json.RawMessage) error {
	if isAbsent(raw) {
		return nil
	}
	var g guardFile
	if err := decodeStrict(raw, "guard", &g, false); err != nil {
		return err
	}
	if g.Threshold != nil && *g.Threshold < 1 {
		return errAt("guard.threshold", "%d: want 1 or more", *g.Threshold)
	}
	c.guardThreshold = g.Threshold
	var err error
	if c.guardWindow, err = positiveDuration("guard.window", g.Window); err != nil {
		return err
	}
	c.guardOpenFor, err = positiveDuration("guard.open_for", g.OpenFor)
	return err
}

func (c *daemonConfig) parseLeader(raw json.RawMessage) error {
	if isAbsent(raw) {
		return nil
	}
	var l leaderFile
	if err := decodeStrict(raw, "leader", &l, false); err != nil {
		return err
	}
	d, err := positiveDuration("leader.lease", l.Lease)
	if err != nil || d == nil {
		return err
	}
	if *d < 10*time.Millisecond {
		return errAt("leader.lease", "%v is too short; want 10ms or more (default 15s)", *d)
	}
	c.leaderLease = *d
	return nil
}

func (c *daemonConfig) parseBudget(raw json.RawMessage) error {
	if isAbsent(raw) {
		return nil
	}
	var b budgetFile
	if err := decodeStrict(raw, "budget", &b, false); err != nil {
		return err
	}
	c.budget.Paused = b.Paused
	if d, err := duration("budget.head_poll_every", b.HeadPollEvery); err != nil {
		return err
	} else if d != nil {
		if *d <= 0 || *d > 24*time.Hour {
			return errAt("budget.head_poll_every", "%v: want more than 0 and at most 24h", *d)
		}
		c.budget.HeadPollEvery = *d
	}
	for _, n := range []struct {
		name string
		v    *int64
	}{{"total", b.Total}, {"validation", b.Validation}, {"candidate", b.Candidate}, {"descriptor", b.Descriptor}, {"bytes", b.Bytes}} {
		if n.v != nil && *n.v < 0 {
			return errAt("budget."+n.name, "%d: want 0 (disabled) or more", *n.v)
		}
	}
	c.budget.Limits = budget.Limits{Total: b.Total, Validation: b.Validation, Candidate: b.Candidate, Descriptor: b.Descriptor, Bytes: b.Bytes}
	seen := map[string]int{}
	for i, r := range b.Sources {
		path := fmt.Sprintf("budget.sources[%d]", i)
		src, err := parseSource(path, r)
		if err != nil {
			return err
		}
		if j, dup := seen[src.Name]; dup {
			return errAt(path+".name", "%q is also budget.sources[%d]", src.Name, j)
		}
		seen[src.Name] = i
		c.budget.Sources = append(c.budget.Sources, src)
	}
	return nil
}

func parseSource(path string, raw json.RawMessage) (budget.Source, error) {
	var s sourceFile
	if err := decodeStrict(raw, path, &s, false); err != nil {
		return budget.Source{}, err
	}
	if err := checkSourceName(path+".name", s.Name); err != nil {
		return budget.Source{}, err
	}
	src := budget.Source{Name: s.Name, OwnerDailyLimit: s.OwnerDailyLimit, ReportedDailyLimit: s.ReportedDailyLimit, ReservePercent: s.ReservePercent}
	switch {
	case s.OwnerDailyLimit != nil && *s.OwnerDailyLimit < 0:
		return src, errAt(path+".owner_daily_limit", "%d: want 0 (no background work) or more", *s.OwnerDailyLimit)
	case s.ReportedDailyLimit != nil && *s.ReportedDailyLimit < 0:
		return src, errAt(path+".reported_daily_limit", "%d: want 0 or more", *s.ReportedDailyLimit)
	case s.ReservePercent != nil && (*s.ReservePercent < 0 || *s.ReservePercent > 100):
		return src, errAt(path+".reserve_percent", "%d: want 0 to 100", *s.ReservePercent)
	}
	share, err := budget.ParseShare(s.Share)
	if err != nil {
		return src, errAt(path+".share", "%q: want gentle, normal or unlimited", s.Share)
	}
	src.Share = share
	pace, err := duration(path+".pace", s.Pace)
	if err != nil {
		return src, err
	}
	if pace != nil {
		switch {
		case *pace < 0 || *pace > 24*time.Hour:
			return src, errAt(path+".pace", "%v: want 0s (no pacing) to 24h", *pace)
		case *pace == 0:
			src.Pace = budget.NoPace
		default:
			src.Pace = *pace
		}
	}
	return src, nil
}

func (c *daemonConfig) parseFeeds(raws []json.RawMessage, getenv func(string) (string, bool)) error {
	seen := map[string]int{}
	for i, raw := range raws {
		path := fmt.Sprintf("feeds[%d]", i)
		var f feedFile
		if err := decodeStrict(raw, path, &f, false); err != nil {
			return err
		}
		if err := checkSourceName(path+".name", f.Name); err != nil {
			return err
		}
		if j, dup := seen[f.Name]; dup {
			return errAt(path+".name", "%q is also feeds[%d]", f.Name, j)
		}
		seen[f.Name] = i
		if err := checkFeedURL(path+".url", f.URL); err != nil {
			return err
		}
		key := f.APIKey
		switch {
		case f.APIKey != "" && f.APIKeyEnv != "":
			return errAt(path, "give api_key or api_key_env, not both")
		case f.APIKeyEnv != "":
			if !validEnvName(f.APIKeyEnv) {
				return errAt(path+".api_key_env", "%q is not an environment variable name", f.APIKeyEnv)
			}
			v, ok := getenv(f.APIKeyEnv)
			if !ok || v == "" {
				return errAt(path+".api_key_env", "environment variable %s is not set", f.APIKeyEnv)
			}
			key = v
		case f.APIKey != "":
			c.inlineKey = true
		}
		for j, cat := range f.Categories {
			if cat < 0 {
				return errAt(fmt.Sprintf("%s.categories[%d]", path, j), "%d: category ids are 0 or more", cat)
			}
		}
		for _, n := range []struct {
			name string
			v    int
		}{{"page_size", f.PageSize}, {"max_pages", f.MaxPages}, {"catch_up", f.CatchUp}, {"keep_items", f.KeepItems}} {
			if n.v < 0 {
				return errAt(path+"."+n.name, "%d: want 0 (the default) or more", n.v)
			}
		}
		if f.KeepItems > 10_000 {
			return errAt(path+".keep_items", "%d: at most 10000 items are kept in memory", f.KeepItems)
		}
		c.feeds = append(c.feeds, server.Feed{Name: f.Name, URL: f.URL, APIKey: key, Categories: f.Categories,
			PageSize: f.PageSize, MaxPages: f.MaxPages, CatchUp: f.CatchUp, KeepItems: f.KeepItems})
	}
	return nil
}

func (c *daemonConfig) parseEvidence(raw json.RawMessage) error {
	if isAbsent(raw) {
		return nil
	}
	var e evidenceFile
	if err := decodeStrict(raw, "evidence", &e, false); err != nil {
		return err
	}
	if len(e.Fingerprint) > 1024 {
		return errAt("evidence.fingerprint", "is %d bytes; the limit is 1024", len(e.Fingerprint))
	}
	c.evidence.Fingerprint = e.Fingerprint
	if d, err := positiveDuration("evidence.ttl", e.TTL); err != nil {
		return err
	} else if d != nil {
		c.evidence.TTL = *d
	}
	if d, err := positiveDuration("evidence.negative_ttl", e.NegativeTTL); err != nil {
		return err
	} else if d != nil {
		c.evidence.NegativeTTL = *d
	}
	if e.MaxRows != nil {
		if *e.MaxRows < 1 {
			return errAt("evidence.max_rows", "%d: want 1 or more (default 60000)", *e.MaxRows)
		}
		c.evidence.MaxRows = *e.MaxRows
	}
	return nil
}

// checkFeedURL never quotes the URL: a query may hold a credential.
func checkFeedURL(path, raw string) error {
	if raw == "" {
		return errAt(path, "is missing: the indexer's API endpoint, such as https://indexer.example/api")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "":
		return errAt(path, "is not a URL with a host, such as https://indexer.example/api")
	case u.Scheme != "http" && u.Scheme != "https":
		return errAt(path, "must be http or https")
	case u.User != nil:
		return errAt(path, "must not carry user:password")
	case u.Query().Has("apikey"):
		return errAt(path, "must not carry the apikey parameter; use api_key_env (or api_key)")
	}
	return nil
}

// checkSourceName applies the budget's rules for source names, which feed
// names follow too since a feed is paid from the source of its name.
func checkSourceName(path, name string) error {
	switch {
	case name == "":
		return errAt(path, "is missing")
	case len(name) > 200:
		return errAt(path, "is %d bytes; the limit is 200", len(name))
	case strings.TrimSpace(name) != name:
		return errAt(path, "%q has surrounding space", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return errAt(path, "%q has a control character", name)
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !(r >= 'A' && r <= 'Z') && !(r >= 'a' && r <= 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// duration parses a duration setting: a string such as "90s" or "2m".
func duration(path string, v *string) (*time.Duration, error) {
	if v == nil {
		return nil, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(*v))
	if err != nil {
		return nil, errAt(path, "%q is not a duration such as 30s, 2m or 1h", *v)
	}
	return &d, nil
}

func positiveDuration(path string, v *string) (*time.Duration, error) {
	d, err := duration(path, v)
	if err != nil || d == nil {
		return d, err
	}
	if *d <= 0 {
		return nil, errAt(path, "%v: want a positive duration", *d)
	}
	return d, nil
}

func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// decodeStrict decodes one JSON object at path into dst, refusing unknown
// members, wrong types and (at the top) trailing data.
func decodeStrict(data []byte, path string, dst any, top bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonConfigError(data, path, err)
	}
	if top {
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return errAt("", "the file has data after its JSON object")
		}
	}
	return nil
}

func jsonConfigError(data []byte, path string, err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	subject := path
	if subject == "" {
		subject = "the file"
	}
	switch {
	case errors.Is(err, io.EOF):
		return errAt("", "%s is empty; want a JSON object", subject)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errAt(path, "the JSON ends before the object does")
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return errAt(path, "malformed JSON at line %d, column %d: %s", line, col, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return errAt("", "%s must be a JSON object, not %s", subject, typ.Value)
		}
		return errAt(join(path, typ.Field), "must be %s, not %s", jsonKindName(typ.Type.Kind().String()), typ.Value)
	}
	// encoding/json names an unknown member only in its message.
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, uerr := strconv.Unquote(f)
		if uerr != nil {
			name = f
		}
		return errAt(join(path, name), "unknown setting")
	}
	return errAt(path, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// position turns a byte offset into a line and column, both from 1.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

func jsonKindName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "bool":
		return "true or false"
	case kind == "string":
		return "a string"
	case kind == "slice", kind == "array":
		return "an array"
	}
	return "an object"
}
