package proxyloop

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
)

// fastRequestHead reports whether the buffered request head, read whole
// into the buffer, is one the fast path serves: an absolute http:// URL,
// HTTP/1.1, one Host header, no body framing (Transfer-Encoding, a
// Content-Length other than one of 0) and no Expect, written so plainly
// that http.Server would read it the same way (see plainHead). Anything
// else is http.Server's, which knows every rule of the protocol and
// refuses what breaks them. beforeWait runs once, before the first read
// that waits for more of the head.
func fastRequestHead(br *bufio.Reader, beforeWait func()) bool {
	var head []byte
	for {
		b, _ := br.Peek(br.Buffered())
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			head = b[:i+2]
			break
		}
		if len(b) >= br.Size() {
			return false
		}
		if beforeWait != nil {
			beforeWait()
			beforeWait = nil
		}
		// Wait for more of the head.
		if _, err := br.Peek(len(b) + 1); err != nil {
			return false
		}
	}
	return plainHead(head)
}

// plainHead reports whether head, a request line and header lines each
// ending in CRLF, is a request the fast path serves, spelled so that no
// reader can find another request boundary in it than net/http does. The
// fast path reads the request with http.ReadRequest, which is laxer than
// http.Server: it keeps a header named "Content-Length " (a space before
// the colon) as an unknown header, and so reads a body meant for it as the
// next request, where http.Server answers 400. So every byte is checked
// here against what the server accepts, and more strictly where that is
// simpler: a name is a token directly followed by its colon, a value
// holds no control byte but tab (so no bare CR or LF), no line is folded,
// the request line is single-spaced with a visible-ASCII target, and the
// Host is a plain host[:port]. A head this refuses is handed off, and the
// server answers it or refuses it with 400 and a closed connection.
func plainHead(head []byte) bool {
	i := bytes.Index(head, []byte("\r\n"))
	line, rest := head[:i], head[i+2:]
	m := 0
	for m < len(line) && tokenByte[line[m]] {
		m++
	}
	if m == 0 || m == len(line) || line[m] != ' ' || string(line[:m]) == http.MethodConnect {
		return false
	}
	target, ok := bytes.CutSuffix(line[m+1:], []byte(" HTTP/1.1"))
	if !ok || !hasPrefixFold(target, "http://") {
		return false
	}
	for _, c := range target {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	hosts, lengths := 0, 0
	for len(rest) > 0 {
		j := bytes.Index(rest, []byte("\r\n"))
		h := rest[:j]
		rest = rest[j+2:]
		n := 0
		for n < len(h) && tokenByte[h[n]] {
			n++
		}
		if n == 0 || n == len(h) || h[n] != ':' {
			// Folded, a name with another byte in it, or no colon.
			return false
		}
		name, value := h[:n], h[n+1:]
		for _, c := range value {
			if !valueByte[c] {
				return false
			}
		}
		switch {
		case equalFold(name, "host"):
			hosts++
			v := bytes.Trim(value, " \t")
			if len(v) == 0 {
				return false
			}
			for _, c := range v {
				if !hostByte[c] {
					return false
				}
			}
		case equalFold(name, "content-length"):
			// A body declared empty is no body, and clients send it so
			// with many a POST or DELETE; handed off, the connection
			// would leave the fast path for life. Any other length,
			// or a second header, is framing for http.Server.
			lengths++
			if lengths > 1 || string(bytes.Trim(value, " \t")) != "0" {
				return false
			}
		case equalFold(name, "transfer-encoding"), equalFold(name, "expect"):
			return false
		}
	}
	return hosts == 1
}

// hasPrefixFold reports whether b starts with prefix, a lower-case ASCII
// string, in any case.
func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}

// equalFold reports whether b is name, a lower-case ASCII string, in any
// case.
func equalFold(b []byte, name string) bool {
	return len(b) == len(name) && hasPrefixFold(b, name)
}

// The bytes plainHead accepts: tokenByte in a method or a header name
// (RFC 9110's tchar), valueByte in a header value (visible ASCII, space,
// tab and obs-text, as http.Server allows), hostByte in a Host (letters,
// digits and what a name, an IP literal and a port need; http.Server
// accepts a few more, which then take the other path).
var tokenByte, valueByte, hostByte = func() (t, v, h [256]bool) {
	for c := 0; c < 256; c++ {
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		t[c] = alnum || strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
		v[c] = c == '\t' || ' ' <= c && c != 0x7f
		h[c] = alnum || strings.IndexByte("-._:[]", byte(c)) >= 0
	}
	return
}()
