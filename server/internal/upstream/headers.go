package upstream

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

// CopyEndToEnd copies the end-to-end headers of src into dst: everything
// but the hop-by-hop headers and those that src's Connection header names.
func CopyEndToEnd(dst, src http.Header) {
	var named []string
	for _, v := range src.Values("Connection") {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				named = append(named, http.CanonicalHeaderKey(f))
			}
		}
	}
	// One backing array for every copied value instead of one per
	// header: this runs twice per proxied request. Each header's slice is
	// capped, so an append to one never writes into the next.
	total := 0
	for _, vv := range src {
		total += len(vv)
	}
	values := make([]string, 0, total)
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
		start := len(values)
		values = append(values, vv...)
		dst[k] = values[start:len(values):len(values)]
	}
}
