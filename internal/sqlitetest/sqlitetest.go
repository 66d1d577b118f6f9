// Package sqlitetest opens fresh SQLite stores for tests.
package sqlitetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hostguard/hostguard/store/sqlite"
)

// Open opens a store on a new SQLite file in t's temporary directory,
// failing the test if it cannot, and closes the store when the test ends.
// Every call makes a database of its own.
func Open(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hostguard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
