package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/retry"
)

const envKey = "s3cret-from-the-environment"

func testEnv(name string) (string, bool) {
	if name == "IDX_KEY" {
		return envKey, true
	}
	return "", false
}

// parseConfig reads a configuration file's bytes as serve does, with the
// built-in defaults under it, and validates the result.
func parseConfig(data []byte, getenv func(string) (string, bool)) (*settings, error) {
	s := newSettings()
	s.bind(flag.NewFlagSet("test", flag.ContinueOnError))
	if err := s.decodeFile(data, getenv); err != nil {
		return nil, err
	}
	s.mergeSources()
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// loadConfig reads the configuration file at path.
func loadConfig(path string) (*settings, error) {
	s := newSettings()
	s.config = path
	return s, s.loadFile(os.LookupEnv)
}

func TestParseConfigFull(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "hostguard.example.json"))
	if err != nil {
		t.Fatal(err)
	}
	env := func(name string) (string, bool) { return "k-" + name, true }
	c, err := parseConfig(data, env)
	if err != nil {
		t.Fatalf("the example configuration does not parse: %v", err)
	}
	if len(c.server.Feeds) == 0 || len(c.budget.Sources) == 0 || c.from["listen"] != fromFile {
		t.Fatalf("the example configures too little: %+v", c)
	}
	for _, f := range c.server.Feeds {
		if f.APIKey == "" {
			t.Errorf("feed %s got no key from its api_key_env", f.Name)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := parseConfig([]byte(`{
		"listen": "127.0.0.1:7500",
		"guard": {"threshold": 3, "window": "1m"},
		"header_timeout": "5s",
		"leader": {"lease": "5s"},
		"maintain_every": "10m",
		"budget": {
			"total": 300, "validation": 0, "head_poll_every": "15m", "paused": true,
			"sources": [
				{"name": "idx", "owner_daily_limit": 2000, "share": "gentle", "pace": "0s"},
				{"name": "other", "share": "unlimited", "reserve_percent": 20, "pace": "10s"}
			]
		},
		"feeds": [
			{"name": "idx", "url": "https://idx.example/api", "api_key_env": "IDX_KEY", "categories": [5000, 5040], "max_pages": 3, "catch_up": 1, "keep_items": 10},
			{"name": "open", "url": "http://192.168.1.5:9117/api/v2.0/indexers/x/results/torznab/api"}
		],
		"evidence": {"fingerprint": "p1", "ttl": "3h", "max_rows": 1000}
	}`), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := c.server.Guard
	if c.listen != "127.0.0.1:7500" || g.Threshold != 3 || g.Window != time.Minute || c.from["guard.open_for"] != "" ||
		c.server.HeaderTimeout != 5*time.Second || c.leader.LeaseFor != 5*time.Second || c.server.MaintainEvery != 10*time.Minute {
		t.Fatalf("daemon settings: %+v", c)
	}
	b := c.budget
	if *b.Limits.Total != 300 || *b.Limits.Validation != 0 || b.Limits.Candidate != nil || b.HeadPollEvery != 15*time.Minute || !b.Paused {
		t.Fatalf("budget: %+v", b)
	}
	s0, s1 := b.Sources[0], b.Sources[1]
	if s0.Name != "idx" || *s0.OwnerDailyLimit != 2000 || s0.Share != budget.ShareGentle || s0.Pace != budget.NoPace ||
		s1.Share != budget.ShareUnlimited || *s1.ReservePercent != 20 || s1.Pace != 10*time.Second {
		t.Fatalf("sources: %+v %+v", s0, s1)
	}
	f0, f1 := c.server.Feeds[0], c.server.Feeds[1]
	if f0.APIKey != envKey || len(f0.Categories) != 2 || f0.MaxPages != 3 || f0.CatchUp != 1 || f0.KeepItems != 10 || f1.APIKey != "" {
		t.Fatalf("feeds: %+v %+v", f0, f1)
	}
	if c.evidence.Fingerprint != "p1" || c.evidence.TTL != 3*time.Hour || c.evidence.MaxRows != 1000 {
		t.Fatalf("evidence: %+v", c.evidence)
	}
	if c.inlineKey {
		t.Fatal("a key from the environment counted as written in the file")
	}
}

func TestParseConfigRetryClasses(t *testing.T) {
	c, err := parseConfig([]byte(`{"retry": {
		"classes": {
			"hash_mismatch": {"ladder": ["24h", "168h", "720h"], "escalate": "sources"},
			"no_peers": {"ladder": ["1h", "6h"]}
		},
		"keep_done": "240h",
		"sync_sightings": true
	}}`), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	hm, np := c.retry.Classes["hash_mismatch"], c.retry.Classes["no_peers"]
	if len(hm.Ladder) != 3 || hm.Ladder[2] != 720*time.Hour || hm.Escalate != retry.BySources ||
		len(np.Ladder) != 2 || np.Escalate != "" || c.retry.KeepDone != 240*time.Hour ||
		!c.retry.SyncSightings {
		t.Fatalf("retry: %+v", c.retry)
	}
}

func TestParseConfigErrorsNameTheSetting(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, "the file is empty"},
		{`[]`, "the file must be a JSON object"},
		{`{"listen": "a",}`, "malformed JSON at line 1"},
		{"{\n\"listen\": \"a\"\n\"db\": 1}", "malformed JSON at line 3"},
		{`{} {}`, "the file has data after the JSON value"},
		{`{"lisen": "x"}`, "lisen: unknown field"},
		{`{"listen": 7411}`, "listen: must be a string, not number"},
		{`{"log_format": "xml"}`, "log_format"},
		{`{"log_level": "loud"}`, "log_level"},
		{`{"db": " "}`, "db: is empty"},
		{`{"header_timeout": "soon"}`, `header_timeout: "soon" is not a duration`},
		{`{"header_timeout": 30}`, "header_timeout: must be a string"},
		{`{"ticket_lease": "-1s"}`, "ticket_lease: is -1s"},
		{`{"guard": {"threshold": -1}}`, "guard.threshold"},
		{`{"guard": {"treshold": 2}}`, "guard.treshold: unknown field"},
		{`{"guard": []}`, "guard: must be a JSON object"},
		{`{"leader": {"lease": "1ms"}}`, "leader.lease"},
		{`{"budget": {"total": -1}}`, "budget.total"},
		{`{"budget": {"bytes": "lots"}}`, "budget.bytes: must be a number"},
		{`{"budget": {"head_poll_every": "48h"}}`, "budget.head_poll_every"},
		{`{"budget": {"sources": [{"name": "a"}, {"name": "a"}]}}`, `budget.sources[1].name: source "a" is listed twice (also sources[0])`},
		{`{"budget": {"sources": [{"name": "a"}, {"name": ""}]}}`, "budget.sources[1].name: is empty"},
		{`{"budget": {"sources": [{"name": " a"}]}}`, "budget.sources[0].name"},
		{`{"budget": {"sources": [{"name": "a", "share": "greedy"}]}}`, "budget.sources[0].share"},
		{`{"budget": {"sources": [{"name": "a", "reserve_percent": 101}]}}`, "budget.sources[0].reserve_percent"},
		{`{"budget": {"sources": [{"name": "a", "owner_daily_limit": -5}]}}`, "budget.sources[0].owner_daily_limit"},
		{`{"budget": {"sources": [{"name": "a", "pace": "-3s"}]}}`, "budget.sources[0].pace"},
		{`{"budget": {"sources": [{"name": "a", "limit": 5}]}}`, "budget.sources[0].limit: unknown field"},
		{`{"budget": {"sources": [{"name": "a", "owner_daily_limit": "5"}]}}`, "budget.sources[0].owner_daily_limit: must be a number"},
		{`{"feeds": [{"name": "a", "url": "https://a/api"}, {"name": "b", "url": "ftp://b/api"}]}`, "feeds[1].url: is not an http or https URL"},
		{`{"feeds": [{"name": "a"}]}`, "feeds[0].url: is empty"},
		{`{"feeds": [{"url": "https://a/api"}]}`, "feeds[0].name: is empty"},
		{`{"feeds": [{"name": "a", "url": "https://a/api"}, {"name": "a", "url": "https://b/api"}]}`, `feeds[1].name: "a" is also feeds[0]`},
		{`{"feeds": [{"name": "a", "url": "https://a/api?apikey=inline-secret"}]}`, "feeds[0].url: must not carry the apikey"},
		{`{"feeds": [{"name": "a", "url": "https://user:inline-secret@a/api"}]}`, "feeds[0].url: must not carry user:password"},
		{`{"feeds": [{"name": "a", "url": "https://a/api", "api_key": "inline-secret", "api_key_env": "IDX_KEY"}]}`, "feeds[0]: give api_key or api_key_env, not both"},
		{`{"feeds": [{"name": "a", "url": "https://a/api", "api_key_env": "UNSET_KEY"}]}`, "feeds[0].api_key_env: environment variable UNSET_KEY is not set"},
		{`{"feeds": [{"name": "a", "url": "https://a/api", "api_key_env": "1BAD"}]}`, "feeds[0].api_key_env"},
		{`{"feeds": [{"name": "a", "url": "https://a/api", "categories": [5000, -1]}]}`, "feeds[0].categories[1]"},
		{`{"feeds": [{"name": "a", "url": "https://a/api", "max_pages": -1}]}`, "feeds[0].max_pages"},
		{`{"feeds": [{"name": "a", "url": "https://a/api", "keep_items": 20000}]}`, "feeds[0].keep_items"},
		{`{"feeds": [{"name": "a", "url": "https://a/api", "apikey": "inline-secret"}]}`, "feeds[0].apikey: unknown field"},
		{`{"feeds": {"name": "a"}}`, "feeds: must be an array"},
		{`{"evidence": {"ttl": "-1s"}}`, "evidence.ttl"},
		{`{"evidence": {"max_rows": -1}}`, "evidence.max_rows"},
		{`{"retry": {"classes": {"x": {"ladder": ["1h", "0s"]}}}}`, "retry.classes.x.ladder[1]"},
		{`{"retry": {"classes": {"x": {"ladder": []}}}}`, "retry.classes.x.ladder: is empty"},
		{`{"retry": {"classes": {"x": {"ladder": ["1h"], "escalate": "peers"}}}}`, "retry.classes.x.escalate"},
		{`{"retry": {"classes": {"x": {"ladder": ["soon"]}}}}`, "retry.classes"},
		{`{"retry": {"classes": {"x": {"ladder": ["1h"], "ladders": 2}}}}`, "retry.classes.x.ladders: unknown field"},
		{`{"retry": {"default": ["-1h"]}}`, "retry.default[0]"},
		{`{"retry": {"keep_done": "soon"}}`, "retry.keep_done"},
	}
	for _, c := range cases {
		_, err := parseConfig([]byte(c.in), testEnv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n  error %v\n  want one containing %q", c.in, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "inline-secret") || strings.Contains(err.Error(), envKey) {
			t.Errorf("%s: the error shows a secret: %v", c.in, err)
		}
	}
}

// TestConfigPrecedence: a flag beats its environment variable, which
// beats the file, which beats the default; budget sources merge.
func TestConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hg.json")
	if err := os.WriteFile(file, []byte(`{
		"listen": "127.0.0.1:7501", "db": "/from/file.db", "log_level": "debug",
		"guard": {"threshold": 5, "open_for": "1m"}, "idle_timeout": "7s",
		"budget": {"sources": [{"name": "a", "owner_daily_limit": 10}, {"name": "b"}]}
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOSTGUARD_CONFIG", file)
	t.Setenv("HOSTGUARD_DB", "/from/env.db")
	t.Setenv("HOSTGUARD_LOG_LEVEL", "")
	t.Setenv("HOSTGUARD_BUDGET_SOURCES", "c:50")
	o, code, stop := parseServe([]string{"--guard-threshold", "4", "--budget-source", "a:99:gentle"}, &strings.Builder{})
	if stop {
		t.Fatalf("parseServe stopped with exit %d", code)
	}
	if o.listen != "127.0.0.1:7501" || o.db != "/from/env.db" || o.logLevel != "debug" || o.server.Guard.Threshold != 4 ||
		o.server.Guard.OpenFor != time.Minute || o.server.IdleTimeout != 7*time.Second || o.server.Guard.Window != guard.DefaultWindow {
		t.Fatalf("merged options: listen %q db %q level %q threshold %d open %v idle %v window %v",
			o.listen, o.db, o.logLevel, o.server.Guard.Threshold, o.server.Guard.OpenFor, o.server.IdleTimeout, o.server.Guard.Window)
	}
	// The command line's --budget-source replaced the environment's list
	// and then the file's source of the same name.
	var got []string
	for _, s := range o.budget.Sources {
		limit := "-"
		if s.OwnerDailyLimit != nil {
			limit = itoa(*s.OwnerDailyLimit)
		}
		got = append(got, s.Name+":"+limit+":"+s.Share.String())
	}
	if strings.Join(got, " ") != "a:99:gentle b:-:normal" {
		t.Fatalf("budget sources %v", got)
	}
}

func TestServeRefusesABadConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hg.json")
	if err := os.WriteFile(file, []byte(`{"feeds": [{"name": "x", "url": "gopher://x/api", "api_key": "inline-secret"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run("serve", "--config", file)
	if code != ExitUsage || !strings.Contains(errs, "feeds[0].url: is not an http or https URL") || strings.Contains(errs, "inline-secret") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = run("serve", "--config", filepath.Join(t.TempDir(), "missing.json"))
	if code != ExitUsage || !strings.Contains(errs, "missing.json") {
		t.Fatalf("missing file: exit %d, stderr %q", code, errs)
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"listen":"127.0.0.1:1","budget":{"total":5,"sources":[{"name":"a","pace":"1s"}]}}`,
		`{"feeds":[{"name":"a","url":"https://a/api","api_key_env":"IDX_KEY","categories":[1]}]}`,
		`{"guard":{"threshold":2,"window":"2m"},"evidence":{"ttl":"1h"},"leader":{"lease":"3s"}}`,
		`{"feeds":[{"name":"a","url":"http://a/api?apikey=x"}]}`,
		`{"budget":{"sources":[{"name":"a"},{"name":"a"}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data, testEnv)
		if err != nil {
			if strings.Contains(err.Error(), envKey) {
				t.Fatalf("an error shows the key from the environment: %v", err)
			}
			return
		}
		// Whatever parses must be acceptable to the budget.
		if _, err := budget.New(nopBudgetStore{}, c.budget); err != nil {
			t.Fatalf("accepted a budget the budget refuses: %v", err)
		}
	})
}

// nopBudgetStore lets budget.New check a configuration; nothing is admitted.
type nopBudgetStore struct{ budget.Store }

func TestLoadConfigNoticesAReadableKey(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		body  string
		mode  os.FileMode
		loose bool
	}{
		{`{"feeds":[{"name":"a","url":"https://a/api","api_key":"inline"}]}`, 0o644, true},
		{`{"feeds":[{"name":"a","url":"https://a/api","api_key":"inline"}]}`, 0o600, false},
		{`{"feeds":[{"name":"a","url":"https://a/api"}]}`, 0o644, false},
	} {
		p := filepath.Join(dir, "c.json")
		if err := os.WriteFile(p, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadConfig(p)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.looseKey != c.loose {
			t.Errorf("%s with mode %v: looseKey %v, want %v", c.body, c.mode, cfg.looseKey, c.loose)
		}
	}
}

// TestBadSettingsAreNamedAsWritten: a value the libraries refuse is
// reported under the name the user wrote it with, wherever it came from.
func TestBadSettingsAreNamedAsWritten(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hg.json")
	if err := os.WriteFile(file, []byte(`{
		"guard": {"window": "-1s"},
		"budget": {"sources": [{"name": "a"}, {"name": "b"}, {"name": "c", "reserve_percent": 101}]}
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"file", []string{"--config", file}, nil, "configuration " + file + ": guard.window: is -1s"},
		{"variable over file", []string{"--config", file}, map[string]string{"HOSTGUARD_GUARD_WINDOW": "-2s"}, "HOSTGUARD_GUARD_WINDOW: is -2s"},
		{"flag over variable", []string{"--config", file, "--guard-window", "-3s"}, map[string]string{"HOSTGUARD_GUARD_WINDOW": "-2s"}, "--guard-window: is -3s"},
		{"list in the file", []string{"--config", file, "--guard-window", "1m"}, nil, "budget.sources[2].reserve_percent: is 101"},
		{"flag", []string{"--guard-threshold", "-1"}, nil, "--guard-threshold: is -1"},
		{"variable", nil, map[string]string{"HOSTGUARD_GUARD_OPEN_FOR": "-1s"}, "HOSTGUARD_GUARD_OPEN_FOR: is -1s"},
		{"transport", []string{"--idle-timeout", "-1s"}, nil, "--idle-timeout: is negative"},
		{"new setting", []string{"--guard-max-endpoints", "-5"}, nil, "--guard-max-endpoints: is -5"},
		{"source flag", []string{"--budget-source", "a\x07"}, nil, "--budget-source: source \"a\\a\": name: contains control character U+0007"},
		{"source variable", nil, map[string]string{"HOSTGUARD_BUDGET_SOURCES": "ok,b\x07"}, "HOSTGUARD_BUDGET_SOURCES: source \"b\\a\": name"},
		{"unparsable variable", nil, map[string]string{"HOSTGUARD_GUARD_THRESHOLD": "two"}, `HOSTGUARD_GUARD_THRESHOLD="two" is not a whole number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			// parseServe, not serve: a case that wrongly passes must not
			// start a daemon.
			var errs strings.Builder
			_, code, stop := parseServe(c.args, &errs)
			if !stop || code != ExitUsage || !strings.Contains(errs.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want usage naming %q", code, errs.String(), c.want)
			}
		})
	}
}

// TestGuardMaxEndpointsReachesTheGuard is the contributor guide's worked
// example: one option row makes a library field a flag, a variable and a
// file setting.
func TestGuardMaxEndpointsReachesTheGuard(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hg.json")
	if err := os.WriteFile(file, []byte(`{"guard": {"max_endpoints": 7}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		env  string
		want int
	}{
		{nil, "", guard.DefaultMaxEndpoints},
		{[]string{"--config", file}, "", 7},
		{[]string{"--config", file}, "9", 9},
		{[]string{"--config", file, "--guard-max-endpoints", "11"}, "9", 11},
	} {
		if c.env != "" {
			t.Setenv("HOSTGUARD_GUARD_MAX_ENDPOINTS", c.env)
		}
		s, code, stop := parseServe(c.args, &strings.Builder{})
		if stop {
			t.Fatalf("%v: exit %d", c.args, code)
		}
		if got := s.server.Guard.MaxEndpoints; got != c.want {
			t.Errorf("%v with variable %q: MaxEndpoints %d, want %d", c.args, c.env, got, c.want)
		}
	}
}

// TestRetryWakeJitterReachesTheScheduler: the wake's spread is a flag, a
// variable and a file setting, negative meaning none.
func TestRetryWakeJitterReachesTheScheduler(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hg.json")
	if err := os.WriteFile(file, []byte(`{"retry": {"wake_jitter": "20s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		env  string
		want time.Duration
	}{
		{nil, "", retry.DefaultWakeJitter},
		{[]string{"--config", file}, "", 20 * time.Second},
		{[]string{"--config", file}, "5s", 5 * time.Second},
		{[]string{"--config", file, "--retry-wake-jitter", "-1s"}, "5s", -time.Second},
	} {
		if c.env != "" {
			t.Setenv("HOSTGUARD_RETRY_WAKE_JITTER", c.env)
		}
		s, code, stop := parseServe(c.args, &strings.Builder{})
		if stop {
			t.Fatalf("%v: exit %d", c.args, code)
		}
		if got := s.retry.WakeJitter; got != c.want {
			t.Errorf("%v with variable %q: WakeJitter %v, want %v", c.args, c.env, got, c.want)
		}
	}
	var out strings.Builder
	if _, code, stop := parseServe([]string{"--retry-wake-jitter", "48h"}, &out); !stop || code != 2 || !strings.Contains(out.String(), "--retry-wake-jitter") {
		t.Errorf("a jitter of two days: exit %d, %q; want exit 2 naming the flag", code, out.String())
	}
}
