package guard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"
)

// ErrBadURL is wrapped by every error Key (and so Acquire, AcquireExempt
// and Reset) returns for a URL it cannot derive an endpoint from. The
// messages say what was wrong without repeating the URL, which may carry
// credentials in its userinfo or query.
var ErrBadURL = errors.New("guard: bad URL")

func badURL(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadURL}, args...)...)
}

// Key returns the endpoint a URL belongs to: its origin, written
// scheme://host[:port]. Scheme and host are lower-cased, an IPv6 host is
// bracketed and written in its canonical form, the port is written without
// leading zeros and dropped when it is the scheme's default (80 for http,
// 443 for https). Userinfo, path, query and fragment never appear in the
// key. http://a and https://a are different endpoints.
//
// A URL that is already in that form (the common case for URLs a program
// builds itself) is keyed without allocating: the key is a prefix of
// rawURL.
func Key(rawURL string) (string, error) {
	if n := canonicalPrefix(rawURL); n > 0 {
		return rawURL[:n], nil
	}
	return deriveKey(rawURL)
}

// deriveKey is Key for any URL, the canonical ones included.
func deriveKey(rawURL string) (string, error) {
	scheme, rest, err := splitScheme(rawURL)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(rest, "//") {
		return "", badURL("no host (want scheme://host[:port])")
	}
	auth := rest[2:]
	for i := 0; i < len(auth); i++ {
		if c := auth[i]; c == '/' || c == '?' || c == '#' {
			auth = auth[:i]
			break
		}
	}
	hostport, hadUserinfo := auth, false
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		hostport, hadUserinfo = auth[i+1:], true
	}
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return "", err
	}
	p, portCanonical, err := parsePort(port)
	if err != nil {
		return "", err
	}
	dropPort := p == 0 || p == defaultPort(scheme)

	if host[0] == '[' {
		return ipv6Key(rawURL, scheme, host, port, p, dropPort, hadUserinfo, portCanonical)
	}
	canonical, err := checkRegName(host)
	if err != nil {
		return "", err
	}
	if canonical && !hadUserinfo && isLowerASCII(scheme) && portCanonical && (port == "" || !dropPort) {
		return rawURL[:len(scheme)+3+len(host)+len(port)+min(len(port), 1)], nil
	}
	if isASCII(host) && strings.IndexByte(host, '%') < 0 {
		// join lower-cases ASCII on the way, which saves a copy.
		return join(scheme, host, true, p, dropPort), nil
	}
	name, err := canonicalRegName(host)
	if err != nil {
		return "", err
	}
	return join(scheme, name, false, p, dropPort), nil
}

// canonicalPrefix returns the length of rawURL's key when the URL starts
// with one already in key form, in one pass: a lower-case letters-only
// scheme, "//", a host of bytes that are already in key form, and a port
// that is canonical and not the scheme's default; then the end, or a path,
// query or fragment. It returns 0 for anything else, which the full
// derivation then handles (and may reject). Most URLs a program builds
// take this path.
func canonicalPrefix(raw string) int {
	i := 0
	// The two schemes nearly every URL has, compared a word at a time.
	switch {
	case strings.HasPrefix(raw, "http://"):
		i = len("http")
	case strings.HasPrefix(raw, "https://"):
		i = len("https")
	default:
		for i < len(raw) && 'a' <= raw[i] && raw[i] <= 'z' {
			i++
		}
		if i == 0 || len(raw) < i+3 || raw[i] != ':' || raw[i+1] != '/' || raw[i+2] != '/' {
			return 0
		}
	}
	scheme := raw[:i]
	j := i + 3
	for j < len(raw) && hostBytes[raw[j]] == hostOK {
		j++
	}
	if j == i+3 {
		return 0
	}
	if j < len(raw) && raw[j] == ':' {
		k, p := j+1, 0
		for k < len(raw) && k-j <= 5 && '0' <= raw[k] && raw[k] <= '9' {
			p = p*10 + int(raw[k]-'0')
			k++
		}
		if k == j+1 || raw[j+1] == '0' || p > 65535 ||
			p == 80 && scheme == "http" || p == 443 && scheme == "https" {
			return 0
		}
		j = k
	}
	if j < len(raw) && raw[j] != '/' && raw[j] != '?' && raw[j] != '#' {
		return 0
	}
	return j
}

// splitScheme splits "scheme:rest" the way net/url does: a scheme is a
// letter followed by letters, digits, '+', '-' or '.'.
func splitScheme(raw string) (scheme, rest string, err error) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return "", "", badURL("no scheme (want scheme://host[:port])")
			}
		case c == ':' && i > 0:
			return raw[:i], raw[i+1:], nil
		default:
			return "", "", badURL("no scheme (want scheme://host[:port])")
		}
	}
	return "", "", badURL("no scheme (want scheme://host[:port])")
}

// splitHostPort separates host and port; host keeps its brackets.
func splitHostPort(hostport string) (host, port string, err error) {
	if hostport == "" {
		return "", "", badURL("no host (want scheme://host[:port])")
	}
	if hostport[0] == '[' {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", "", badURL("IPv6 host has no closing ']'")
		}
		host, after := hostport[:end+1], hostport[end+1:]
		switch {
		case after == "":
			return host, "", nil
		case after[0] == ':':
			return host, after[1:], nil
		}
		return "", "", badURL("unexpected characters after the IPv6 host")
	}
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return hostport, "", nil
	}
	host, port = hostport[:i], hostport[i+1:]
	if strings.IndexByte(host, ':') >= 0 {
		return "", "", badURL("an IPv6 host must be in brackets")
	}
	if host == "" {
		return "", "", badURL("no host (want scheme://host[:port])")
	}
	return host, port, nil
}

// parsePort returns the port's value (0 when absent) and whether it is
// written canonically (no leading zeros, not an empty ":").
func parsePort(port string) (value int, canonical bool, err error) {
	if port == "" {
		return 0, true, nil
	}
	for i := 0; i < len(port); i++ {
		c := port[i]
		if c < '0' || c > '9' {
			return 0, false, badURL("port is not a number")
		}
		value = value*10 + int(c-'0')
		if value > 65535 {
			return 0, false, badURL("port is above 65535")
		}
	}
	if value == 0 {
		return 0, false, badURL("port 0 cannot be contacted")
	}
	return value, port[0] != '0', nil
}

func defaultPort(scheme string) int {
	switch {
	case strings.EqualFold(scheme, "http"):
		return 80
	case strings.EqualFold(scheme, "https"):
		return 443
	}
	return -1
}

// Classes of bytes in a host name, for checkRegName.
const (
	hostBad     = iota // not allowed
	hostOK             // allowed and already in key form
	hostRewrite        // allowed, but the key writes it differently (upper case, non-ASCII)
	hostEscape         // '%', the start of an escape
)

// hostBytes classifies every byte: letters, digits and the characters
// net/url accepts in a host name besides them.
var hostBytes = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = hostOK
		t[c-'a'+'A'] = hostRewrite
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = hostOK
	}
	for _, c := range []byte("-._~!$&'()*+,;=") {
		t[c] = hostOK
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = hostRewrite
	}
	t['%'] = hostEscape
	return t
}()

// checkRegName validates a host name byte by byte, accepting what net/url
// accepts in a host except percent escapes of ASCII (which it rejects
// anyway, %25 aside, and which cannot be dialled). It reports whether the
// name is already in key form: lower-case and without escapes.
func checkRegName(host string) (canonical bool, err error) {
	canonical = true
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch hostBytes[c] {
		case hostOK:
		case hostRewrite:
			canonical = false
		case hostEscape:
			if i+2 >= len(host) || unhex(host[i+1]) < 0 || unhex(host[i+2]) < 0 {
				return false, badURL("malformed percent escape in host")
			}
			if unhex(host[i+1]) < 8 {
				return false, badURL("percent escape of an ASCII character in host")
			}
			canonical = false
			i += 2
		default:
			return false, badURL("invalid character %q in host", c)
		}
	}
	return canonical, nil
}

// canonicalRegName decodes percent escapes (only of non-ASCII bytes, as
// checkRegName guarantees) and lower-cases the name.
func canonicalRegName(host string) (string, error) {
	if strings.IndexByte(host, '%') >= 0 {
		var b strings.Builder
		b.Grow(len(host))
		for i := 0; i < len(host); i++ {
			if host[i] == '%' {
				b.WriteByte(byte(unhex(host[i+1])<<4 | unhex(host[i+2])))
				i += 2
				continue
			}
			b.WriteByte(host[i])
		}
		host = b.String()
	}
	if !utf8.ValidString(host) {
		return "", badURL("host is not valid UTF-8")
	}
	return strings.ToLower(host), nil
}

func ipv6Key(raw, scheme, host, port string, p int, dropPort, hadUserinfo, portCanonical bool) (string, error) {
	inner := host[1 : len(host)-1]
	zone := ""
	if i := strings.IndexByte(inner, '%'); i >= 0 {
		// RFC 6874 writes the zone separator as %25.
		if !strings.HasPrefix(inner[i:], "%25") || len(inner) == i+3 {
			return "", badURL("malformed zone in IPv6 host")
		}
		inner, zone = inner[:i], inner[i+3:]
		if strings.ContainsAny(zone, "%[]") {
			return "", badURL("malformed zone in IPv6 host")
		}
		for j := 0; j < len(zone); j++ {
			if zone[j] < 0x21 || zone[j] >= 0x7f {
				return "", badURL("malformed zone in IPv6 host")
			}
		}
	}
	addr, err := netip.ParseAddr(inner)
	if err != nil || !addr.Is6() || addr.Zone() != "" {
		return "", badURL("brackets in host do not hold an IPv6 address")
	}
	var buf [64]byte
	form := addr.AppendTo(buf[:0])
	if string(form) == inner && zone == "" && !hadUserinfo && isLowerASCII(scheme) && portCanonical && (port == "" || !dropPort) {
		return raw[:len(scheme)+3+len(host)+len(port)+min(len(port), 1)], nil
	}
	name := "[" + string(form)
	if zone != "" {
		// Interface names are case-sensitive: the zone keeps its case.
		name += "%25" + zone
	}
	return join(scheme, name+"]", false, p, dropPort), nil
}

// join writes a key; lowerHost lower-cases the host's ASCII letters.
func join(scheme, host string, lowerHost bool, port int, dropPort bool) string {
	var b strings.Builder
	b.Grow(len(scheme) + 3 + len(host) + 6)
	for i := 0; i < len(scheme); i++ {
		b.WriteByte(lower(scheme[i]))
	}
	b.WriteString("://")
	if lowerHost {
		for i := 0; i < len(host); i++ {
			b.WriteByte(lower(host[i]))
		}
	} else {
		b.WriteString(host)
	}
	if !dropPort {
		b.WriteByte(':')
		var digits [5]byte
		n := len(digits)
		for ; port > 0; port /= 10 {
			n--
			digits[n] = byte('0' + port%10)
		}
		b.Write(digits[n:])
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
