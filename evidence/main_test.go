package evidence_test

import (
	"context"
	"testing"
	"time"

	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/internal/clocktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClock returns the fake clock the tests start on.
func newClock() *clocktest.Clock { return clocktest.New(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)) }

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
