package sflist

import (
	"strings"
	"testing"

	"github.com/dunglas/httpsfv"
)

// FuzzAgreesWithAStrictParser compares this lenient reader with httpsfv,
// a parser of RFC 9651's structured fields, on every list httpsfv
// accepts: the same members, each with the same name when it is a token
// or a string, and the same value for each parameter that is one. (This
// reader also accepts what a strict parser refuses, because an
// upstream's Proxy-Status must be read as leniently as a client reads
// it; those lists have no strict reading to compare. Lists with RFC
// 9651's display strings are not compared.) A parameter given twice has
// its last value in both.
func FuzzAgreesWithAStrictParser(f *testing.F) {
	for _, s := range []string{
		"hostguard; error=destination_unavailable",
		`cache-1; error=http_request_error; details="hostguard, said \"hi\"", "hostguard";error=connection_timeout`,
		`a;x=1;y=?1, (b c);z="q", "s";k=:AQID:`,
		"hostguard;error=dns_timeout;error=tls_protocol_error",
		"  a ,b  ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.Contains(v, `%"`) {
			// RFC 9651's display strings, which escape by percent
			// encoding, not backslashes: no field hostguard reads or
			// writes uses them, and this reader knows RFC 8941's lists.
			return
		}
		list, err := httpsfv.UnmarshalList([]string{v})
		if err != nil || len(list) == 0 {
			return
		}
		members, ok := Members(v)
		if !ok || len(members) != len(list) {
			t.Fatalf("%q: %d members (ok %v); httpsfv reads %d", v, len(members), ok, len(list))
		}
		for i, m := range list {
			item, isItem := m.(httpsfv.Item)
			if !isItem {
				continue // an inner list has no name to compare
			}
			if name, ok := stringOf(item.Value); ok && Name(members[i]) != name {
				t.Fatalf("%q: member %d named %q; httpsfv reads %q", v, i, Name(members[i]), name)
			}
			for _, k := range item.Params.Names() {
				pv, _ := item.Params.Get(k)
				want, ok := stringOf(pv)
				if !ok {
					continue
				}
				if got, found := Param(members[i], k); !found || got != want {
					t.Fatalf("%q: member %d parameter %s = %q (found %v); httpsfv reads %q", v, i, k, got, found, want)
				}
			}
		}
	})
}

// stringOf returns a bare item's text when it is a token or a string.
func stringOf(v any) (string, bool) {
	switch s := v.(type) {
	case httpsfv.Token:
		return string(s), true
	case string:
		return s, true
	}
	return "", false
}
