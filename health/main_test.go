package health_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/logtest"
	"github.com/hostguard/hostguard/store/sqlite"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClock returns the fake clock a bundle starts on.
func newClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
}

// logs collects a Tracker's log lines; lines decodes them.
type logs struct{ logtest.Buffer }

func (l *logs) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(strings.NewReader(l.String()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("log output is not JSON lines: %v", err)
		}
		out = append(out, m)
	}
	return out
}

// countingStore counts the calls a Tracker makes, to prove how many queries
// an operation costs.
type countingStore struct {
	health.Store
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingStore) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

func (c *countingStore) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

func (c *countingStore) HealthBlocked(ctx context.Context, p health.StoreBlockedParams) ([]string, error) {
	c.count("blocked")
	return c.Store.HealthBlocked(ctx, p)
}

func (c *countingStore) HealthGet(ctx context.Context, name string) (health.Record, bool, error) {
	c.count("get")
	return c.Store.HealthGet(ctx, name)
}

func (c *countingStore) HealthTouch(ctx context.Context, p health.StoreTouchParams) (health.Record, error) {
	c.count("touch")
	return c.Store.HealthTouch(ctx, p)
}

// bundle is what most tests need.
type bundle struct {
	tr    *health.Tracker
	clock *clocktest.Clock
	store *countingStore
	logs  *logs
	path  string
	cfg   health.Config
}

// setup makes a Tracker over a fresh SQLite file with a fake clock and a log
// capture. cfg's Now and Logger are filled in unless set.
func setup(t *testing.T, cfg health.Config) *bundle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "health.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{clock: newClock(), logs: &logs{}, path: path}
	b.store = &countingStore{Store: st, calls: map[string]int{}}
	if cfg.Now == nil {
		cfg.Now = b.clock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	b.cfg = cfg
	b.tr = b.restart()
	return b
}

// restart makes a new Tracker over the same store, as a restarted process
// would.
func (b *bundle) restart() *health.Tracker {
	tr, err := health.New(b.store, b.cfg)
	if err != nil {
		panic(err) // the tests' configurations are valid
	}
	return tr
}

func bg() context.Context { return context.Background() }

func touch(t *testing.T, tr *health.Tracker, name string, ok bool) health.Result {
	t.Helper()
	r, err := tr.TouchResult(bg(), name, ok)
	if err != nil {
		t.Fatalf("TouchResult(%q, %v): %v", name, ok, err)
	}
	return r
}

func status(t *testing.T, tr *health.Tracker, name string) health.Status {
	t.Helper()
	st, err := tr.Status(bg(), name)
	if err != nil {
		t.Fatalf("Status(%q): %v", name, err)
	}
	return st
}
