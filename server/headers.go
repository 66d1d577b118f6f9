package server

import (
	"net/http"
	"strings"
)

// hopByHop are the headers that describe one connection rather than the
// message (RFC 9110 section 7.6.1), plus Proxy-Connection, which old
// clients still send. A proxy must not forward them.
var hopByHop = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// copyEndToEnd copies the end-to-end headers of src into dst: everything
// but the hop-by-hop headers and those that src's Connection header names.
func copyEndToEnd(dst, src http.Header) {
	var named []string
	for _, v := range src.Values("Connection") {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				named = append(named, http.CanonicalHeaderKey(f))
			}
		}
	}
outer:
	for k, vv := range src {
		for _, h := range hopByHop {
			if k == h {
				continue outer
			}
		}
		for _, h := range named {
			if k == h {
				continue outer
			}
		}
		dst[k] = append([]string(nil), vv...)
	}
}
