// Package inputtext holds the one rule every capability applies to the
// strings it is given (ids, names, sources, notes, fingerprints): no NUL
// byte, valid UTF-8, no control character.
//
// The rule exists because the storage engines disagree on such strings.
// PostgreSQL refuses NUL and invalid UTF-8 in text columns while SQLite
// stores them, and JSON decoding turns invalid UTF-8 into U+FFFD, so two
// different byte strings can become one key. Control characters are refused
// because they corrupt logs and status pages. Checking once, before any
// store is touched, makes both engines answer the same way.
package inputtext

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Check reports whether s is acceptable text. It returns nil, or an error
// whose message is a short reason meant to follow a field name, such as
// "contains a NUL byte", "is not valid UTF-8" or
// "contains control character U+0007". Control characters are C0
// (U+0000-U+001F, tab and newline included), DEL (U+007F) and C1
// (U+0080-U+009F). The empty string is acceptable: whether a field may be
// empty is the caller's rule.
//
// Callers wrap the reason in their own typed input error, so the returned
// error is meant to be read, not matched.
func Check(s string) error {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == 0:
				return errNUL
			case c < 0x20 || c == 0x7f:
				return controlError(rune(c))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return errUTF8
		}
		if r >= 0x80 && r <= 0x9f {
			return controlError(r)
		}
		i += size
	}
	return nil
}

var (
	errNUL  = errors.New("contains a NUL byte")
	errUTF8 = errors.New("is not valid UTF-8")
)

func controlError(r rune) error {
	return fmt.Errorf("contains control character %U", r)
}
