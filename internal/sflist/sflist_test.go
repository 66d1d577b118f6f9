package sflist

import (
	"strings"
	"testing"
)

func TestReadsAProxyStatusList(t *testing.T) {
	v := `cache-1; error=http_request_error; details="hostguard, said \"hi\"", "host\guard";error="connection_timeout", x`
	members, ok := Members(v)
	if !ok || len(members) != 3 {
		t.Fatalf("Members = %q, %v; want three members", members, ok)
	}
	if got := Name(members[0]); got != "cache-1" {
		t.Errorf("first name %q", got)
	}
	if got := Name(members[1]); got != "hostguard" {
		t.Errorf("quoted name %q, want its escapes undone", got)
	}
	if got, ok := Param(members[1], "ERROR"); !ok || got != "connection_timeout" {
		t.Errorf("Param = %q, %v", got, ok)
	}
	if got, ok := Param(members[0], "details"); !ok || got != `hostguard, said "hi"` {
		t.Errorf("quoted param = %q, %v", got, ok)
	}
	if _, ok := Param(members[2], "error"); ok {
		t.Error("a member without parameters has an error parameter")
	}
	if got, _ := Param("hostguard;error=dns_timeout;error=tls_protocol_error", "error"); got != "tls_protocol_error" {
		t.Errorf("a parameter given twice = %q; want its last value, as RFC 9651 says", got)
	}
	if _, ok := Members(`a; details="open`); ok {
		t.Error("an open quoted string is accepted")
	}
}

// FuzzMembers: splitting loses and adds nothing, and a member's name is
// read the same way in the list and on its own.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		"hostguard; error=destination_unavailable",
		`a, "host\"guard"; x=";,", b`,
		`broken; details="hostguard`,
		"\vhostguard, \t x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		members, ok := Members(v)
		if strings.Join(members, ",") != v {
			t.Fatalf("%q split into %q, which do not join back", v, members)
		}
		if !ok {
			return
		}
		for _, m := range members {
			again, _ := Members(m)
			if len(again) != 1 {
				t.Fatalf("member %q of %q splits again into %q", m, v, again)
			}
			if Name(m) != Name(strings.TrimSpace(m)) {
				t.Fatalf("member %q reads %q untrimmed and %q trimmed", m, Name(m), Name(strings.TrimSpace(m)))
			}
		}
	})
}
