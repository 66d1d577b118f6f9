package health_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hostguard/hostguard/health"
)

func TestNormalizeName(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"example.com":             "example.com",
		"  Example.COM\t":         "example.com",
		"Rapid-Host":              "rapid-host",
		"https://API.example.com": "https://api.example.com",
		"http://h.example:8080/p": "http://h.example:8080/p",
		"ÜBER.example":            "über.example",
		strings.Repeat("a", 255):  strings.Repeat("a", 255),
		"h.example:8080":          "h.example:8080",
		"[2001:db8::1]:443":       "[2001:db8::1]:443",
	}
	for in, want := range good {
		got, err := health.NormalizeName(in)
		if err != nil || got != want {
			t.Errorf("NormalizeName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                                 "empty",
		" \t\n ":                           "empty",
		strings.Repeat("a", 256):           "256 bytes",
		"bad\xffutf8":                      "UTF-8",
		"tab\tinside":                      "control character",
		"nul\x00inside":                    "NUL byte",
		"c1\u0085inside":                   "control character",
		"https://user:s3cret@h.example/":   "userinfo",
		"https://h.example/?apikey=s3cret": "query",
		"https://h.example/#s3cret":        "fragment",
		// The same without a scheme, as a URL path segment decodes them.
		"user:s3cret@h.example":       "userinfo",
		"h.example?apikey=s3cret":     "query",
		"h.example#s3cret":            "fragment",
		"user%3As3cret%40h.example":   "encoded",
		"h.example%3Fapikey%3Ds3cret": "encoded",
		"user@host":                   "userinfo",
		"two words":                   "white space",
		"no\u00a0break":               "white space",
	}
	for in, wantInErr := range bad {
		_, err := health.NormalizeName(in)
		if err == nil || !strings.Contains(err.Error(), wantInErr) || !strings.HasPrefix(err.Error(), "health: ") {
			t.Errorf("NormalizeName(%q) error = %v; want a health: error mentioning %q", in, err, wantInErr)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NormalizeName error repeats a secret: %v", err)
		}
	}
}

func TestNamesAreCaseInsensitiveAndTrimmed(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	touch(t, b.tr, " Mixed.Case.Example ", false)
	touch(t, b.tr, "MIXED.CASE.EXAMPLE", false)
	r := touch(t, b.tr, "mixed.case.example", false)
	if r.ConsecutiveFails != 3 || r.Name != "mixed.case.example" || r.Display != "Mixed.Case.Example" {
		t.Fatalf("three spellings of one name: %+v; want one record with 3 fails, display as first seen", r.Record)
	}
}

func TestBadNameChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, health.Config{})
	if err := b.tr.Touch(bg(), "", true); err == nil {
		t.Fatal("Touch with an empty name: want an error")
	}
	if _, err := b.tr.Healthy(bg(), "  "); err == nil {
		t.Fatal("Healthy with an empty name: want an error")
	}
	if _, err := b.tr.Available(bg(), strings.Repeat("x", 300)); err == nil {
		t.Fatal("Available with a 300-byte name: want an error")
	}
	if n := b.store.snapshot()["touch"]; n != 0 {
		t.Fatalf("rejected touches reached the store %d times", n)
	}
	// The rejected success must not have counted as evidence that the
	// network works.
	b.clock.Advance(time.Second)
	if r := touch(t, b.tr, "down.example", false); r.Counted {
		t.Fatal("a rejected success fed outage protection")
	}
}

func FuzzNormalizeName(f *testing.F) {
	for _, s := range []string{"example.com", " A.B ", "", "https://u:p@h/", "İstanbul.example", "ẞ", "\u00a0x\u00a0", "a\x00b", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		key, err := health.NormalizeName(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "health: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		if key == "" || len(key) > health.MaxNameLen || !utf8.ValidString(key) || key != strings.TrimSpace(key) {
			t.Fatalf("NormalizeName(%q) = %q: empty, too long, invalid or untrimmed", in, key)
		}
		if key != strings.ToLower(key) {
			t.Fatalf("NormalizeName(%q) = %q is not lower case", in, key)
		}
		again, err := health.NormalizeName(key)
		if err != nil || again != key {
			t.Fatalf("not idempotent: NormalizeName(%q) = %q, then %q, %v", in, key, again, err)
		}
		upper, err := health.NormalizeName(" " + strings.ToUpper(in) + " ")
		// Not strings.EqualFold: the question is whether upper-casing then
		// lower-casing gives the lower-case form back, which simple case
		// folding does not answer for every rune.
		//lint:ignore SA6005 the round trip is the property under test
		if err == nil && strings.ToLower(strings.ToUpper(in)) == strings.ToLower(in) && upper != key {
			t.Fatalf("case variants differ: %q -> %q, upper -> %q", in, key, upper)
		}
	})
}
