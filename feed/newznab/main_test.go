package newznab_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/feed/newznab"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// budgetRecorder records what a client tells its budget.
type budgetRecorder struct {
	mu        sync.Mutex
	reported  []int64
	exhausted []string
	untils    []time.Time
}

func (b *budgetRecorder) ReportLimit(_ context.Context, source string, n int64) error {
	b.mu.Lock()
	b.reported = append(b.reported, n)
	b.mu.Unlock()
	return nil
}

func (b *budgetRecorder) MarkExhausted(_ context.Context, source string, until time.Time) error {
	b.mu.Lock()
	b.exhausted = append(b.exhausted, source)
	b.untils = append(b.untils, until)
	b.mu.Unlock()
	return nil
}

func (b *budgetRecorder) calls() ([]int64, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.reported...), append([]string(nil), b.exhausted...)
}

func (b *budgetRecorder) untilsSent() []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Time(nil), b.untils...)
}

// newClient returns a client over a plain transport that the test closes,
// so that goleak sees no idle connection goroutines.
func newClient(t *testing.T, cfg newznab.Config) *newznab.Client {
	t.Helper()
	if cfg.HTTPClient == nil {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		cfg.HTTPClient = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	c, err := newznab.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
