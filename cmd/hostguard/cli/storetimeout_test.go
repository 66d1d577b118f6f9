package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/sqlite"
)

func TestDBTimeoutReachesTheStore(t *testing.T) {
	if postgres.DefaultTimeout != sqlite.DefaultTimeout {
		t.Fatalf("db_timeout's default is postgres.DefaultTimeout (%v), but SQLite's is %v", postgres.DefaultTimeout, sqlite.DefaultTimeout)
	}
	file := filepath.Join(t.TempDir(), "hg.json")
	if err := os.WriteFile(file, []byte(`{"db_timeout": "7s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		env  string
		want time.Duration
	}{
		{nil, "", postgres.DefaultTimeout},
		{[]string{"--config", file}, "", 7 * time.Second},
		{[]string{"--config", file}, "9s", 9 * time.Second},
		{[]string{"--config", file, "--db-timeout", "-1s"}, "9s", -time.Second},
	} {
		if c.env != "" {
			t.Setenv("HOSTGUARD_DB_TIMEOUT", c.env)
		}
		s, code, stop := parseServe(c.args, &strings.Builder{})
		if stop {
			t.Fatalf("%v: exit %d", c.args, code)
		}
		if got := s.dbTimeout; got != c.want {
			t.Errorf("%v with variable %q: timeout %v, want %v", c.args, c.env, got, c.want)
		}
	}
}

// A file written for 0.1.0 is told where postgres.timeout went.
func TestPostgresTimeoutInAFileNamesItsNewName(t *testing.T) {
	var s settings
	err := s.decodeFile([]byte(`{"postgres": {"timeout": "7s"}}`), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "postgres.timeout") || !strings.Contains(err.Error(), "db_timeout") {
		t.Fatalf("decoding 0.1.0's postgres.timeout: %v; want an error naming it and db_timeout", err)
	}
}
