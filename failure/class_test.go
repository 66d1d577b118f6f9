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
			t.Errorf("Class(%q).String() = %q; not a metric label", string(c), s)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("Class(%q) and Class(%q) share label %q", string(prev), string(c), s)
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
	if got := failure.Class("weird\x04").String(); got != "unknown" {
		t.Errorf("undefined class String() = %q, want unknown", got)
	}
	for _, c := range failure.Classes() {
		if c != failure.None && string(c) != c.String() {
			t.Errorf("string(%v) = %q; a conversion must give the label", c, string(c))
		}
	}
	if string(failure.None) != "" || failure.None.String() != "none" {
		t.Errorf("None is %q reading %q; want the empty string reading none", string(failure.None), failure.None)
	}
	var zero failure.Class
	if zero != failure.None {
		t.Error("the zero Class is not None")
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
