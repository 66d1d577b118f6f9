package proxyloop

import (
	"bufio"
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

// FuzzFastPathReadsLikeHTTPServer: the loop and net/http's server,
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
	// testdata/fuzz holds the heads the daemon's
	// TestProxyRefusesSmuggledRequests sends, each with its smuggled
	// request behind it.
	f.Fuzz(func(t *testing.T, input string) {
		br := bufio.NewReaderSize(strings.NewReader(input), headBuffer)
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
