package retry

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func FuzzDecodeHistory(f *testing.F) {
	f.Add([]byte(`[[1700000000000,"no_peers"],[1700000001000,"timeout","read: i/o timeout"]]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[[1,2,3]]`))
	f.Add([]byte(`{"a":1}`))
	f.Add([]byte(`[[9223372036854775807,"x","y","z"]]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHistory(b)
		if err != nil {
			return
		}
		// Whatever decodes must survive a round trip unchanged.
		again, err := decodeHistory(encodeHistory(h))
		if err != nil {
			t.Fatalf("re-decode of %q: %v", b, err)
		}
		if len(h) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(h, again) {
			t.Fatalf("round trip of %q: %+v became %+v", b, h, again)
		}
	})
}

func FuzzHistoryRoundTrip(f *testing.F) {
	f.Add(int64(1700000000000), "no_peers", "note")
	f.Add(int64(-5), "x", "")
	f.Fuzz(func(t *testing.T, ms int64, class, note string) {
		if ms > 1<<50 || ms < -(1<<50) {
			return
		}
		a := Attempt{At: time.UnixMilli(ms).UTC(), Class: strings.ToValidUTF8(class, "?"), Note: clipNote(note)}
		h, err := decodeHistory(encodeHistory([]Attempt{a}))
		if err != nil || len(h) != 1 || h[0] != a {
			t.Fatalf("round trip of %+v: %+v, %v", a, h, err)
		}
	})
}

func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"1", "42", "", newTokens(1)[0], strings.Repeat("A", tokenLen), strings.Repeat("0", tokenLen+1), " " + newTokens(1)[0][1:]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		err := checkToken(tok)
		canonical := len(tok) == tokenLen && strings.Trim(tok, "0123456789abcdef") == ""
		if (err == nil) != canonical {
			t.Fatalf("checkToken(%q) = %v; canonical form: %v", tok, err, canonical)
		}
	})
}

func TestTokensAreRandomAndCanonical(t *testing.T) {
	seen := map[string]bool{}
	for _, tok := range newTokens(1000) {
		if err := checkToken(tok); err != nil {
			t.Fatalf("newTokens made %q: %v", tok, err)
		}
		if seen[tok] {
			t.Fatalf("token %q drawn twice", tok)
		}
		seen[tok] = true
	}
	if tokenBytes*8 < 128 {
		t.Fatalf("tokens carry %d bits, fewer than 128", tokenBytes*8)
	}
}

func FuzzClipNote(f *testing.F) {
	f.Add(strings.Repeat("é", 150))
	f.Add("bad \xff utf8 \x00 nul")
	f.Fuzz(func(t *testing.T, note string) {
		c := clipNote(note)
		if len(c) > MaxNoteBytes || !utf8.ValidString(c) || strings.IndexByte(c, 0) >= 0 {
			t.Fatalf("clipNote(%q) = %q", note, c)
		}
	})
}

func FuzzCheckID(f *testing.F) {
	f.Add("0123456789abcdef0123456789abcdef01234567")
	f.Add("")
	f.Add("a\x00b")
	f.Add("tab\there")
	f.Add("c1 \u0085")
	f.Fuzz(func(t *testing.T, id string) {
		err := checkID(id)
		ok := id != "" && len(id) <= MaxIDBytes && utf8.ValidString(id) && !strings.Contains(id, "\x00") &&
			!strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f })
		if (err == nil) != ok {
			t.Fatalf("checkID(%q) = %v", id, err)
		}
	})
}
