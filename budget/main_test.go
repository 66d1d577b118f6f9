package budget_test

import (
	"context"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/sqlitetest"
	"github.com/hostguard/hostguard/store/sqlite"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noon is a fixed test time in the middle of a UTC day.
var noon = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

type fixture struct {
	st    *sqlite.Store
	clock *clocktest.Clock
	b     *budget.Budget
}

// setup returns a Budget over a fresh SQLite store with a fake clock at
// noon. cfg.Now is filled in.
func setup(t *testing.T, cfg budget.Config) *fixture {
	t.Helper()
	f := &fixture{st: sqlitetest.Open(t), clock: clocktest.New(noon)}
	cfg.Now = f.clock.Now
	b, err := budget.New(f.st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.b = b
	return f
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func (f *fixture) report(t *testing.T) budget.Report {
	t.Helper()
	r, err := f.b.Report(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) source(t *testing.T, name string) budget.SourceReport {
	t.Helper()
	for _, s := range f.report(t).Sources {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("source %q not in the report", name)
	return budget.SourceReport{}
}

func (f *fixture) kind(t *testing.T, k budget.Kind) budget.Line {
	t.Helper()
	for _, l := range f.report(t).Kinds {
		if l.Kind == k {
			return l
		}
	}
	t.Fatalf("kind %q not in the report", k)
	return budget.Line{}
}

// admitN admits until the first refusal (at most max times) and returns how
// many were admitted and the refusal.
func admitN(t *testing.T, b *budget.Budget, p budget.AdmitParams, max int) (int, error) {
	t.Helper()
	for i := range max {
		if _, err := b.Admit(ctx(t), p); err != nil {
			return i, err
		}
	}
	return max, nil
}
