package guard

import "testing"

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
