package evidence_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/store/sqlite"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClock returns the fake clock the tests start on.
func newClock() *clocktest.Clock { return clocktest.New(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)) }

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hostguard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newBook(t *testing.T, st evidence.Store, cfg evidence.Config) *evidence.Book {
	t.Helper()
	b, err := evidence.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}
