package failure_test

import (
	"regexp"
	"testing"

	"github.com/hostguard/hostguard/failure"
)

func TestClassLabels(t *testing.T) {
	t.Parallel()
	labelRE := regexp.MustCompile(`^[a-z][a-z_]*$`)
	seen := map[string]failure.Class{}
	for _, c := range failure.Classes() {
		s := c.String()
		if !labelRE.MatchString(s) {
			t.Errorf("Class(%d).String() = %q; not a metric label", c, s)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("Class(%d) and Class(%d) share label %q", prev, c, s)
		}
		seen[s] = c
	}
	want := []string{"none", "timeout", "dns_not_found", "dns_temporary", "refused", "host_unreachable",
		"network_unreachable", "aborted", "reset", "canceled", "tls", "policy", "unknown"}
	for _, w := range want {
		if _, ok := seen[w]; !ok {
			t.Errorf("no class has label %q", w)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("Classes() has %d labels, want %d", len(seen), len(want))
	}
	if got := failure.Class(200).String(); got != "unknown" {
		t.Errorf("out-of-range class String() = %q, want unknown", got)
	}
}

func TestHostLevel(t *testing.T) {
	t.Parallel()
	hostLevel := map[failure.Class]bool{
		failure.Timeout: true, failure.DNSNotFound: true, failure.DNSTemporary: true, failure.Refused: true,
		failure.HostUnreachable: true, failure.NetworkUnreachable: true, failure.Aborted: true,
	}
	for _, c := range failure.Classes() {
		if got := c.HostLevel(); got != hostLevel[c] {
			t.Errorf("%v.HostLevel() = %v, want %v", c, got, hostLevel[c])
		}
	}
}
