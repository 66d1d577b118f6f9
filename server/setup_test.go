package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/logtest"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/sqlite"
)

// newFakeClock returns the fake clock a fixture starts on.
func newFakeClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// fixture is one served Server over a fresh SQLite file, with both
// listeners on 127.0.0.1.
type fixture struct {
	t     *testing.T
	s     *Server
	api   string // base URL of the API
	proxy string // host:port of the proxy
	clock *clocktest.Clock
	store hostguard.Store
	logs  *logtest.Buffer
	stop  func() error // ends Serve and returns its error
}

// setup serves a Server whose clocks are one fake clock, with short
// timeouts and private destinations allowed (every test host is on
// 127.0.0.1). opts adjust the Config before New.
func setup(t *testing.T, opts ...func(*Config)) *fixture {
	t.Helper()
	return setupProxyOn(t, listen(t), opts...)
}

// setupProxyOn is setup with the proxy served on proxyLn.
func setupProxyOn(t *testing.T, proxyLn net.Listener, opts ...func(*Config)) *fixture {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hostguard.db"))
	if err != nil {
		t.Fatal(err)
	}
	return serveProxyOn(t, st, newFakeClock(), proxyLn, opts...)
}

// serveOn is setup over a store of the caller's: several fixtures may
// share one PostgreSQL store, as the nodes of a cluster do. The fixture
// closes st when the test ends.
func serveOn(t *testing.T, st hostguard.Store, clock *clocktest.Clock, opts ...func(*Config)) *fixture {
	t.Helper()
	return serveProxyOn(t, st, clock, listen(t), opts...)
}

func serveProxyOn(t *testing.T, st hostguard.Store, clock *clocktest.Clock, proxyLn net.Listener, opts ...func(*Config)) *fixture {
	t.Helper()
	ctx := context.Background()
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
		{Name: "indexer", OwnerDailyLimit: budget.Int(100)}, // 10 a day under the normal share, 3 s apart
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
	cfg := Config{
		Budget:          bud,
		Evidence:        book,
		FeedStore:       st,
		Elector:         el,
		AllowPrivate:    true,
		Guard:           guard.Config{Now: clock.Now, Disabled: func() bool { return false }},
		HeaderTimeout:   300 * time.Millisecond,
		IdleTimeout:     300 * time.Millisecond,
		SweepEvery:      time.Hour, // tests expire tickets by calling expireTickets
		ShutdownTimeout: 2 * time.Second,
		Health:          tracker,
		Retry:           sched,
		Logger:          log,
		Now:             clock.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		book.Close()
		st.Close()
		t.Fatal(err)
	}
	apiLn := listen(t)
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
	return &fixture{t: t, s: s, api: "http://" + apiLn.Addr().String(), proxy: proxyLn.Addr().String(),
		clock: clock, store: st, logs: logs, stop: stop}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// client is an HTTP client that never uses a proxy from the environment
// and closes its connections when the test ends.
func testClient(t *testing.T) *http.Client {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v: %q", a.status, err, a.body)
	}
	return m
}

// do sends a request to the API; body is sent as is if it is a string,
// else encoded as JSON (nil sends none).
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
		// As every client does; a test of the refusal overrides it.
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := testClient(f.t).Do(req)
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

// expectError checks a JSON error answer: its status and the field it
// blames ("" for none).
func expectError(t *testing.T, a answer, status int, field string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d; body %s", a.status, status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	m := a.json(t)
	msg, _ := m["error"].(string)
	if !strings.HasPrefix(msg, "server: ") || len(msg) < 15 {
		t.Fatalf("error message %q does not explain itself", msg)
	}
	got, _ := m["field"].(string)
	if got != field {
		t.Fatalf("field %q, want %q (error %q)", got, field, msg)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func guardConfig(threshold int) guard.Config { return guard.Config{Threshold: threshold} }
