package proxystatus

import (
	"strings"
	"testing"
)

// FuzzWithoutOwnMembers: the member split must be stable. A list without
// hostguard passes untouched, and what is kept, split again, keeps every
// member: a kept member that read as hostguard on a second look would be
// a forged fast-fail the first look missed.
func FuzzWithoutOwnMembers(f *testing.F) {
	for _, s := range []string{
		"hostguard; error=destination_unavailable",
		`cache-1; error=http_request_error; details="hostguard, said \"hi\"", "HostGuard";error=x, cache-2`,
		`HOSTGUARD ; error=connection_timeout`,
		`broken; details="hostguard`,
		`a, "host\guard"; x, b`,
		`"hostguard\"", hostguard`,
		"\vhostguArd", // once kept, then trimmed into a member named hostguard
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		out := withoutOwnMembers(v)
		if !strings.Contains(strings.ToLower(v), Name) && out != v {
			t.Fatalf("%q has no hostguard member but became %q", v, out)
		}
		if again := withoutOwnMembers(out); again != out {
			t.Fatalf("%q kept %q, which loses members on a second look: %q", v, out, again)
		}
	})
}
