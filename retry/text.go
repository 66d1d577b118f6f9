package retry

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// checkText applies the project's strict-string rule (no NUL, valid
// UTF-8, no C0, DEL or C1 control character) and returns a short reason
// meant to follow a field name. Both engines then answer alike: PostgreSQL
// refuses NUL and invalid UTF-8 in text while SQLite stores them.
func checkText(s string) error {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == 0:
				return errors.New("contains a NUL byte")
			case c < 0x20 || c == 0x7f:
				return fmt.Errorf("contains control character %U", rune(c))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return errors.New("is not valid UTF-8")
		}
		if r >= 0x80 && r <= 0x9f {
			return fmt.Errorf("contains control character %U", r)
		}
		i += size
	}
	return nil
}
