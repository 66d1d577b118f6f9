package cli

import (
	"strings"
	"testing"

	"github.com/hostguard/hostguard/server"
)

// TestMaxHeaderBytesReachesTheServer: the head bound is a setting from the
// flag, the variable and its default, and a bad value is a usage error
// naming the flag.
func TestMaxHeaderBytesReachesTheServer(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  string
		want int
	}{
		{nil, "", server.DefaultMaxHeaderBytes},
		{nil, "4096", 4096},
		{[]string{"--max-header-bytes", "-1"}, "4096", -1},
	} {
		if c.env != "" {
			t.Setenv("HOSTGUARD_MAX_HEADER_BYTES", c.env)
		}
		s, code, stop := parseServe(c.args, &strings.Builder{})
		if stop {
			t.Fatalf("%v: exit %d", c.args, code)
		}
		if got := s.server.MaxHeaderBytes; got != c.want {
			t.Errorf("%v with variable %q: MaxHeaderBytes %d, want %d", c.args, c.env, got, c.want)
		}
	}
	var errs strings.Builder
	if _, code, stop := parseServe([]string{"--max-header-bytes", "100"}, &errs); !stop || code != ExitUsage || !strings.Contains(errs.String(), "--max-header-bytes") {
		t.Fatalf("exit %d, stderr %q; want a usage error naming --max-header-bytes", code, errs.String())
	}
}
