// Package sflist reads the lists of HTTP's structured fields (RFC 8941)
// that hostguard writes and reads back, Proxy-Status (RFC 9209) above
// all, as leniently as the daemon and its Go client must both read them:
// members split at commas outside quoted strings, a member's name, and
// its parameters. The daemon strips its own members from what an
// upstream sends, and the client looks for the daemon's member; both go
// through this one reader, so a member the daemon would strip is exactly
// one the client would take for the daemon's.
package sflist

import "strings"

// Members splits a list into its members at commas outside quoted
// strings (whose backslash escapes it honours), untrimmed; ok is false
// when a quoted string is left open.
func Members(v string) (members []string, ok bool) {
	return split(v, ',')
}

// Name returns a member's name: a token, or a quoted string unescaped,
// before its parameters. Any white space around it is trimmed, not only
// the field's optional white space: a reader might take "\vhostguard" for
// hostguard too.
func Name(member string) string {
	m := strings.TrimSpace(member)
	if !strings.HasPrefix(m, `"`) {
		name, _, _ := strings.Cut(m, ";")
		return strings.TrimSpace(name)
	}
	return unquote(m)
}

// Param returns the value of a member's parameter key (compared without
// regard to case), a quoted value unescaped; ok is false when the member
// has no such parameter.
func Param(member, key string) (value string, ok bool) {
	params, _ := split(member, ';')
	// From the end: a parameter given twice has its last value (RFC 9651,
	// 4.2.3.2).
	for i := len(params) - 1; i >= 1; i-- {
		k, v, _ := strings.Cut(strings.TrimSpace(params[i]), "=")
		if strings.EqualFold(strings.TrimSpace(k), key) {
			v = strings.TrimSpace(v)
			if strings.HasPrefix(v, `"`) {
				v = unquote(v)
			}
			return v, true
		}
	}
	return "", false
}

// split cuts s at sep where sep is not inside a quoted string.
func split(s string, sep byte) (parts []string, ok bool) {
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:]), !quoted
}

// unquote returns the content of the quoted string that opens s, its
// escapes undone, up to its closing quote or the end of s.
func unquote(s string) string {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
