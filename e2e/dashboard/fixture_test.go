package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/logtest"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server"
	"github.com/hostguard/hostguard/store/sqlite"
)

// loginToken is the API token of the daemons that ask for one.
const loginToken = "s3cret-token-for-the-dashboard"

// dashboardCookie is the name of the dashboard's session cookie.
const dashboardCookie = "hostguard_session"

// statusReport is GET /v1/status's answer.
type statusReport = api.Status

// fixture is one daemon, built with server.New over a fresh SQLite file
// and served on 127.0.0.1, as an embedding program does; its clocks are
// one fake clock.
type fixture struct {
	t     *testing.T
	api   string // base URL of the API
	clock *clocktest.Clock
	logs  *logtest.Buffer
	stop  func() error // ends Serve and returns its error
}

// setup serves a daemon with short timeouts, private destinations allowed
// (every test host is on 127.0.0.1) and the dashboard refreshing every
// browserRefresh. opts adjust the Config before server.New.
func setup(t *testing.T, opts ...func(*server.Config)) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hostguard.db"))
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tracker, err := health.New(st, health.Config{Now: clock.Now, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := retry.New(st, retry.Config{Now: clock.Now, Jitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	bud, err := budget.New(st, budget.Config{Now: clock.Now, Sources: []budget.Source{
		{Name: "indexer", OwnerDailyLimit: budget.Int(100)},
		{Name: "unpaced", OwnerDailyLimit: budget.Int(100), Pace: budget.NoPace},
	}})
	if err != nil {
		t.Fatal(err)
	}
	book, err := evidence.New(st, evidence.Config{Now: clock.Now, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	el, err := leader.New(st, leader.Config{Now: clock.Now, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{
		Budget:           bud,
		Evidence:         book,
		FeedStore:        st,
		Elector:          el,
		AllowPrivate:     true,
		Guard:            guard.Config{Now: clock.Now, Disabled: func() bool { return false }},
		HeaderTimeout:    300 * time.Millisecond,
		IdleTimeout:      300 * time.Millisecond,
		SweepEvery:       time.Hour,
		ShutdownTimeout:  2 * time.Second,
		DashboardRefresh: browserRefresh,
		Health:           tracker,
		Retry:            sched,
		Logger:           log,
		Now:              clock.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		book.Close()
		st.Close()
		t.Fatal(err)
	}
	apiLn, proxyLn := listen(t), listen(t)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Serve(sctx, apiLn, proxyLn) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			serveErr = <-done
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
		book.Close()
		st.Close()
	})
	return &fixture{t: t, api: "http://" + apiLn.Addr().String(), clock: clock, logs: logs, stop: stop}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request to the API; body is sent as is if it is a string,
// else encoded as JSON (nil sends none). hdr are header names and values.
func (f *fixture) do(method, path string, body any, hdr ...string) answer {
	f.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, f.api+path, r)
	if err != nil {
		f.t.Fatal(err)
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// decodeInto decodes a 200 answer's JSON into v.
func decodeInto(t *testing.T, a answer, v any) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decoding %s: %v", a.body, err)
	}
}

// claim claims up to n items for lease seconds and returns their leases.
func (f *fixture) claim(t *testing.T, n int, lease float64) []api.Lease {
	t.Helper()
	var out api.ClaimResponse
	decodeInto(t, f.do("POST", "/v1/items/claim", map[string]any{"n": n, "lease_seconds": lease, "worker": "w1"}), &out)
	return out.Leases
}

// fetchPath is the fetch route's path for upstream, with extra query
// parameters.
func fetchPath(upstream string, extra ...string) string {
	p := "/v1/fetch?url=" + url.QueryEscape(upstream)
	for _, e := range extra {
		p += "&" + e
	}
	return p
}
