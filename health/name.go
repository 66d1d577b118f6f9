package health

import (
	"strings"
	"unicode"

	"github.com/hostguard/hostguard/internal/inputtext"
)

// MaxNameLen is the longest name accepted, in bytes after normalisation. It
// matches the longest DNS name with room to spare, and keeps a runaway key
// (a whole URL with a query, say) out of the database.
const MaxNameLen = 255

// NormalizeName returns the key under which name is stored: trimmed of
// surrounding white space and lower-cased, so that " Example.COM" and
// "example.com" are one host.
//
// It refuses, with an *InputError for Field "name": an empty name, one
// longer than MaxNameLen bytes, a NUL byte, invalid UTF-8, control
// characters, and white space inside the name. It also refuses every
// character that would let a name carry a credential or an API key, with
// or without a URL scheme: '@' (userinfo, as in "user:pw@host"), '?' (a
// query), '#' (a fragment) and '%' (any of them percent-encoded, as in
// "user%3Apw%40host"). Those must never be stored or logged, so the error
// never repeats the name.
func NormalizeName(name string) (string, error) {
	_, key, err := normalize(name)
	return key, err
}

// normalize returns the display form (trimmed, case kept) and the key.
func normalize(name string) (display, key string, err error) {
	display = strings.TrimSpace(name)
	if display == "" {
		return "", "", invalid("name", "is empty")
	}
	if err := inputtext.Check(display); err != nil {
		return "", "", invalid("name", "%v", err)
	}
	if i := strings.IndexFunc(display, unicode.IsSpace); i >= 0 {
		return "", "", invalid("name", "contains white space; use the host name")
	}
	switch i := strings.IndexAny(display, "@?#%"); {
	case i < 0:
	case display[i] == '@':
		return "", "", invalid("name", "contains '@' (userinfo); use the host name")
	case display[i] == '?':
		return "", "", invalid("name", "contains '?' (a query); use the host name")
	case display[i] == '#':
		return "", "", invalid("name", "contains '#' (a fragment); use the host name")
	default:
		return "", "", invalid("name", "contains '%%' (an encoded character); use the host name as it is")
	}
	key = strings.ToLower(display)
	if n := max(len(key), len(display)); n > MaxNameLen {
		return "", "", invalid("name", "is %d bytes long, over the limit of %d", n, MaxNameLen)
	}
	return display, key, nil
}
