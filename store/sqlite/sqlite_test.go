package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/hostguard/hostguard/store/storetest"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newHarness(t *testing.T) *storetest.Harness {
	path := filepath.Join(t.TempDir(), "hostguard.db")
	return &storetest.Harness{
		Engine: "sqlite",
		Open: func(t testing.TB) hostguard.Store {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatalf("open %s: %v", path, err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

func TestConformance(t *testing.T) { storetest.Run(t, newHarness) }

func TestRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostguard.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = sqlite.Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "9999") || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("want a 'newer schema' error naming version 9999, got %v", err)
	}
}

func TestRejectsBadPath(t *testing.T) {
	for _, p := range []string{"", "  ", "a.db?mode=ro"} {
		if _, err := sqlite.Open(context.Background(), p); err == nil {
			t.Errorf("Open(%q): want an error", p)
		}
	}
	if _, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")); err == nil {
		t.Fatal("want an error for a database in a missing directory")
	}
}
