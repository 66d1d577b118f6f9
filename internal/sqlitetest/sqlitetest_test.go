package sqlitetest_test

import (
	"testing"
	"time"

	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/internal/sqlitetest"
)

func TestOpenGivesEachCallADatabaseOfItsOwn(t *testing.T) {
	t.Parallel()
	a, b := sqlitetest.Open(t), sqlitetest.Open(t)
	p := feed.StoreCommitParams{Name: "f", IDs: []string{"x"}, Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if _, err := a.FeedCommit(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.FeedCursor(t.Context(), "f"); err != nil || !ok {
		t.Fatalf("the store lost its write: %v, %v", ok, err)
	}
	if _, ok, err := b.FeedCursor(t.Context(), "f"); err != nil || ok {
		t.Fatalf("another store sees the write: %v, %v", ok, err)
	}
}
