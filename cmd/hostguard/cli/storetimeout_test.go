package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/store/postgres"
)

func TestPostgresTimeoutReachesTheStore(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hg.json")
	if err := os.WriteFile(file, []byte(`{"postgres": {"timeout": "7s"}}`), 0o600); err != nil {
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
		{[]string{"--config", file, "--postgres-timeout", "-1s"}, "9s", -time.Second},
	} {
		if c.env != "" {
			t.Setenv("HOSTGUARD_POSTGRES_TIMEOUT", c.env)
		}
		s, code, stop := parseServe(c.args, &strings.Builder{})
		if stop {
			t.Fatalf("%v: exit %d", c.args, code)
		}
		if got := s.postgres.Timeout; got != c.want {
			t.Errorf("%v with variable %q: Timeout %v, want %v", c.args, c.env, got, c.want)
		}
	}
}
