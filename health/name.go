package health

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen is the longest name accepted, in bytes after normalisation. It
// matches the longest DNS name with room to spare, and keeps a runaway key
// (a whole URL with a query, say) out of the database.
const MaxNameLen = 255

// NormalizeName returns the key under which name is stored: trimmed of
// surrounding white space and lower-cased, so that " Example.COM" and
// "example.com" are one host. It rejects an empty name, a name longer than
// MaxNameLen bytes, invalid UTF-8, control characters, and a URL that
// carries userinfo, a query or a fragment (those may hold credentials or API
// keys, which must never be stored or logged). The error never repeats such
// a URL.
func NormalizeName(name string) (string, error) {
	_, key, err := normalize(name)
	return key, err
}

// normalize returns the display form (trimmed, case kept) and the key.
func normalize(name string) (display, key string, err error) {
	display = strings.TrimSpace(name)
	if display == "" {
		return "", "", errors.New("health: empty name")
	}
	if !utf8.ValidString(display) {
		return "", "", errors.New("health: name is not valid UTF-8")
	}
	for _, r := range display {
		if unicode.IsControl(r) {
			return "", "", fmt.Errorf("health: name contains control character %U", r)
		}
	}
	if strings.Contains(display, "://") && strings.ContainsAny(display, "@?#") {
		return "", "", errors.New("health: name is a URL with userinfo, a query or a fragment; use the host name")
	}
	key = strings.ToLower(display)
	if n := max(len(key), len(display)); n > MaxNameLen {
		return "", "", fmt.Errorf("health: name is %d bytes long, over the limit of %d", n, MaxNameLen)
	}
	return display, key, nil
}
