package guard

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// FuzzCanonicalPrefix checks Key's one-pass shortcut against the full
// derivation: whenever the shortcut accepts a URL, both give the same key.
func FuzzCanonicalPrefix(f *testing.F) {
	for _, s := range []string{
		"http://a.test/", "https://a.test:443/", "http://a.test:80", "http://a.test:8080/x?y#z",
		"http://a.test:08080/", "http://a.test:65536/", "http://a.test:/", "http://user@a.test/",
		"http://A.test/", "svn+ssh://a.test/", "http://[::1]:80/", "http://a.test:123456/",
		"http://a.test;x/", "http://a.test%41/", "https://a.test:443", "ftp://a.test:21/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n := canonicalPrefix(raw)
		if n == 0 {
			return
		}
		full, err := deriveKey(raw)
		if err != nil || full != raw[:n] {
			t.Fatalf("canonicalPrefix(%q) = %q; full derivation %q, %v", raw, raw[:n], full, err)
		}
	})
}

// TestTableChurn inserts and removes far more records than the table has
// slots, as a stream above the cap does, and checks every lookup against
// a plain map.
func TestTableChurn(t *testing.T) {
	t.Parallel()
	tab := newTable(0, maphash.MakeSeed())
	var ring []*endpoint
	want := map[string]*endpoint{}
	for i := range 20_000 {
		ep := &endpoint{key: fmt.Sprintf("http://h%d.test", i)}
		tab = tab.put(ep, ring)
		ep.slot = len(ring)
		ring = append(ring, ep)
		want[ep.key] = ep
		if i%3 != 0 { // drop the first record of every three, twice over
			old := ring[i-i%3]
			if old != nil && !old.evicted {
				old.evicted = true
				tab.remove(old)
				ring[old.slot] = nil
				delete(want, old.key)
			}
		}
	}
	for k, ep := range want {
		if got := tab.get(k); got != ep {
			t.Fatalf("get(%s) = %p, want %p", k, got, ep)
		}
	}
	for _, ep := range ring {
		if ep != nil && ep.evicted {
			t.Fatal("ring holds an evicted record")
		}
	}
	if got := tab.get("http://absent.test"); got != nil {
		t.Fatalf("absent key found: %v", got)
	}
	if tab.live != len(want) || len(tab.slots) > 8*len(want)+minTableSlots {
		t.Errorf("table: %d live for %d records, %d slots", tab.live, len(want), len(tab.slots))
	}
}
