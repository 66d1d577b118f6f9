package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultPostgres is the test server used when HOSTGUARD_TEST_POSTGRES is unset.
const DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// PostgresDSN returns a DSN for a new, empty schema on the test PostgreSQL
// server (HOSTGUARD_TEST_POSTGRES, else DefaultPostgres); the schema is
// dropped when the test ends. When no server answers, the test is skipped
// with a message — except when the CI environment variable is set, where a
// missing server fails the test, so that CI can never pass by skipping.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv("HOSTGUARD_TEST_POSTGRES")
	if base == "" {
		base = DefaultPostgres
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL test server unavailable under CI (set HOSTGUARD_TEST_POSTGRES): %v", err)
		}
		t.Skipf("no PostgreSQL test server (set HOSTGUARD_TEST_POSTGRES, default %s): %v", DefaultPostgres, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "hgtest_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop test schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop test schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("HOSTGUARD_TEST_POSTGRES is not a URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
