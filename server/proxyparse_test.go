package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// smugglingHeads are request heads that net/http's server refuses but a
// looser reader takes as bodyless, so their body would be read as a
// second request. %s is the upstream's host:port; each head declares the
// body that follows it, a whole request to /SMUGGLED.
var smugglingHeads = []struct{ name, head string }{
	{"space before the colon of Content-Length", "Content-Length : %d\r\n"},
	{"tab before the colon of Content-Length", "Content-Length\t: %d\r\n"},
	{"space before the colon of Transfer-Encoding", "Transfer-Encoding : chunked\r\nX-Len: %d\r\n"},
	{"bare CR before Content-Length", "X-Note: a\rContent-Length: %d\r\n"},
	{"invalid byte in a name", "Content-Length: %d\r\nX\x01Y: 1\r\n"},
	{"NUL in a value", "X-Note: a\x00b\r\nContent-Length: %d\r\n"},
	{"two differing lengths", "Content-Length: 0\r\nContent-Length: %d\r\n"},
	{"a signed length", "Content-Length: +%d\r\n"},
	{"Transfer-Encoding other than chunked", "Transfer-Encoding: identity\r\nX-Len: %d\r\n"},
}

// TestProxyRefusesSmuggledRequests: a head net/http's server refuses is
// answered 400 and its connection closed on both paths, so its body never
// reaches an upstream as a request of its own.
func TestProxyRefusesSmuggledRequests(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.URL.Path) })
	host := strings.TrimPrefix(up.URL, "http://")
	smuggled := fmt.Sprintf("GET %s/SMUGGLED HTTP/1.1\r\nHost: %s\r\n\r\n", up.URL, host)
	for _, path := range []struct {
		name   string
		before string // what the connection carries first
	}{
		{"fast path", ""},
		{"after a hand-off", fmt.Sprintf("GET %s/old HTTP/1.0\r\nHost: %s\r\n\r\n", up.URL, host)},
	} {
		for _, tc := range smugglingHeads {
			t.Run(path.name+"/"+tc.name, func(t *testing.T) {
				c, br := f.rawProxyConn(t)
				head := fmt.Sprintf("GET %s/first HTTP/1.1\r\nHost: %s\r\n"+tc.head+"\r\n", up.URL, host, len(smuggled))
				if path.before != "" {
					// HTTP/1.0 closes after its answer unless kept alive.
					fmt.Fprint(c, strings.Replace(path.before, "\r\n\r\n", "\r\nConnection: keep-alive\r\n\r\n", 1))
					if code, _ := readAnswer(t, br, "GET"); code != 200 {
						t.Fatalf("the request before: %d", code)
					}
				}
				fmt.Fprint(c, head+smuggled)
				resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
				if err != nil {
					t.Fatalf("reading the answer: %v", err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				// net/http answers a Transfer-Encoding it does not
				// know 501, the rest 400.
				want := http.StatusBadRequest
				if strings.Contains(tc.head, "identity") {
					want = http.StatusNotImplemented
				}
				if resp.StatusCode != want {
					t.Errorf("answered %d, want %d", resp.StatusCode, want)
				}
				// The connection is closed after the refusal, without a
				// second answer.
				if b, err := br.ReadByte(); !errors.Is(err, io.EOF) {
					t.Errorf("after the refusal the connection carried %q (%v), want EOF", b, err)
				}
			})
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.reqs {
		if r.URL.Path == "/SMUGGLED" {
			t.Fatalf("a smuggled request reached the upstream: %s %s", r.Method, r.URL)
		}
	}
}
