package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
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

// FuzzFastPathReadsLikeHTTPServer: the fast path and net/http's server,
// given the same bytes, agree on the first request's method, target,
// Host, headers and (empty) body, or the fast path declines it. A head the
// fast path takes but cannot read is one the server refuses too. The
// server is a real http.Server reading from an in-memory connection, so
// its own checks after http.ReadRequest (names, values, Host) count.
func FuzzFastPathReadsLikeHTTPServer(f *testing.F) {
	for _, seed := range []string{
		"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nhost: a\r\nX-A:\tb \r\nx-a: c\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: \xff\r\n\r\n",
		"GET http://a:80/%41?q HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
		"POST http://a/x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
		"POST http://a/x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello",
		"POST http://a/x HTTP/1.1\r\nHost: a\r\nContent-Length:  00\r\n\r\n",
		"POST http://a/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: a\r\n Content-Length: 4\r\n\r\nabcd",
		"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: y\r\n\tContent-Length: 4\r\n\r\nabcd",
		"GET http://a/ HTTP/1.1\nHost: a\n\n",
		"GET http://a/ HTTP/1.1\r\nHost: a\nContent-Length: 4\r\n\r\nabcd",
		"GET  http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a/ HTTP/1.1 \r\nHost: a\r\n\r\n",
		"GET http://a/ HTTP/1.10\r\nHost: a\r\n\r\n",
		"G\x00T http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a/\x7f HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\n: x\r\nHost: a\r\n\r\n",
		"CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
	} {
		f.Add(seed)
	}
	for _, tc := range smugglingHeads {
		f.Add(fmt.Sprintf("GET http://a/first HTTP/1.1\r\nHost: a\r\n"+tc.head+"\r\nGET http://a/SMUGGLED HTTP/1.1\r\nHost: a\r\n\r\n", 38))
	}
	f.Fuzz(func(t *testing.T, input string) {
		br := bufio.NewReaderSize(strings.NewReader(input), proxyHeadBuffer)
		if !fastRequestHead(br, nil) {
			return
		}
		ref := serverReads(t, input)
		req, err := http.ReadRequest(br)
		if err != nil {
			// serveOne answers 400 and closes; so must the server.
			if ref != nil {
				t.Fatalf("the fast path refuses %q (%v); http.Server read %s %s", input, err, ref.method, ref.target)
			}
			return
		}
		if ref == nil {
			t.Fatalf("the fast path took %q as %s %s; http.Server refused it", input, req.Method, req.RequestURI)
		}
		hdr := req.Header.Clone()
		delete(hdr, "Host")
		fast := readRequest{method: req.Method, target: req.RequestURI, host: req.Host, header: hdr,
			length: req.ContentLength, te: req.TransferEncoding}
		if !reflect.DeepEqual(fast, *ref) {
			t.Fatalf("%q:\nfast path   %+v\nhttp.Server %+v", input, fast, *ref)
		}
	})
}

// readRequest is what a server made of a request.
type readRequest struct {
	method, target, host string
	header               http.Header
	length               int64
	te                   []string
	body                 string
}

// serverReads serves input to a real http.Server and returns its first
// request, or nil if the server answered none.
func serverReads(t *testing.T, input string) *readRequest {
	var got *readRequest
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if got == nil {
				got = &readRequest{method: r.Method, target: r.RequestURI, host: r.Host, header: r.Header.Clone(),
					length: r.ContentLength, te: r.TransferEncoding, body: string(b)}
			}
		}),
		ErrorLog: log.New(io.Discard, "", 0),
	}
	c := &inputConn{r: strings.NewReader(input), closed: make(chan struct{})}
	ln := newHandoffListener(c.LocalAddr())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	ln.give(c)
	<-c.closed
	_ = srv.Close()
	<-served
	return got
}

// inputConn is a client that sends its input and then closes its side.
type inputConn struct {
	r      *strings.Reader
	once   sync.Once
	closed chan struct{}
}

func (c *inputConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *inputConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *inputConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
func (c *inputConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *inputConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *inputConn) SetDeadline(time.Time) error      { return nil }
func (c *inputConn) SetReadDeadline(time.Time) error  { return nil }
func (c *inputConn) SetWriteDeadline(time.Time) error { return nil }
