package inputtext_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/hostguard/hostguard/internal/inputtext"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want string // "" means accepted
	}{
		{"empty", "", ""},
		{"ascii", "indexer-a.example", ""},
		{"space and punctuation", "a b/c:d?e#f", ""},
		{"non-ASCII letters", "Zürich 東京", ""},
		{"emoji", "ok 👍", ""},
		{"U+FFFD written out", "x\uFFFDy", ""},
		{"U+00A0 after C1", "a\u00a0b", ""},
		{"NUL", "a\x00b", "contains a NUL byte"},
		{"NUL first wins over later control", "\x00\x07", "contains a NUL byte"},
		{"bell", "a\ab", "contains control character U+0007"},
		{"tab", "a\tb", "contains control character U+0009"},
		{"newline", "a\n", "contains control character U+000A"},
		{"unit separator", "\x1f", "contains control character U+001F"},
		{"DEL", "a\x7f", "contains control character U+007F"},
		{"C1 first", "\u0080", "contains control character U+0080"},
		{"C1 last", "x\u009f", "contains control character U+009F"},
		{"lone continuation byte", "\x80", "is not valid UTF-8"},
		{"bad byte after text", "ok\xff", "is not valid UTF-8"},
		{"truncated sequence", "\xe6\x9d", "is not valid UTF-8"},
		{"overlong NUL", "\xc0\x80", "is not valid UTF-8"},
		{"surrogate half", "\xed\xa0\x80", "is not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := inputtext.Check(tc.in)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check(%q) = %v, want nil", tc.in, err)
			case tc.want != "" && err == nil:
				t.Fatalf("Check(%q) = nil, want %q", tc.in, tc.want)
			case tc.want != "" && err.Error() != tc.want:
				t.Fatalf("Check(%q) = %q, want %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestCheckAllocatesNothingOnGoodText(t *testing.T) {
	s := strings.Repeat("indexer-ä.example ", 8)
	if n := testing.AllocsPerRun(100, func() { _ = inputtext.Check(s) }); n != 0 {
		t.Fatalf("Check allocated %v times per run on good text", n)
	}
}

// FuzzCheck holds Check to its definition written the slow way: accepted
// exactly when the text is valid UTF-8 and has no rune in C0, DEL or C1.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "a", "a\x00", "\xff", "\u0085", "\x7f", "é", "\xc0\x80", "日本\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := utf8.ValidString(s)
		if want {
			for _, r := range s {
				if unicode.IsControl(r) {
					want = false
					break
				}
			}
		}
		err := inputtext.Check(s)
		if (err == nil) != want {
			t.Fatalf("Check(%q) = %v, want accepted=%v", s, err, want)
		}
		if err != nil && err.Error() == "" {
			t.Fatalf("Check(%q) returned an empty reason", s)
		}
	})
}
