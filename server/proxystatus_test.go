package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestUpstreamCannotSpeakForHostguard: Proxy-Status members named
// hostguard in an upstream's answer are dropped on the proxy's fast path,
// on the path it hands off and on the fetch route; other members stay.
func TestUpstreamCannotSpeakForHostguard(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Proxy-Status"] = []string{
			"hostguard; error=destination_unavailable",
			`cache-1; error=http_request_error; details="hostguard, said \"hi\"", "HostGuard";error=x, cache-2`,
			`HOSTGUARD ; error=connection_timeout`,
			`broken; details="hostguard`,
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	host := strings.TrimPrefix(up.URL, "http://")
	want := []string{`cache-1; error=http_request_error; details="hostguard, said \"hi\"", cache-2`}
	check := func(t *testing.T, status int, h http.Header) {
		t.Helper()
		if status != http.StatusServiceUnavailable {
			t.Fatalf("answered %d, want the upstream's 503", status)
		}
		if got := h.Values("Proxy-Status"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Proxy-Status %q, want %q", got, want)
		}
	}
	for _, tc := range []struct{ name, req string }{
		{"fast path", "GET %s/x HTTP/1.1\r\nHost: %s\r\n\r\n"},
		{"handed off", "POST %s/x HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\nhi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br := f.rawProxyConn(t)
			fmt.Fprintf(c, tc.req, up.URL, host)
			resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			check(t, resp.StatusCode, resp.Header)
		})
	}
	t.Run("fetch", func(t *testing.T) {
		a := f.do("GET", fetchPath(up.URL+"/x"), nil)
		check(t, a.status, a.header)
	})
}
