package proxyloop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/faulthost"
)

// harness is a Loop served on 127.0.0.1, with an http.Server on its
// hand-offs that runs the same handler, as the daemon has it.
type harness struct {
	addr string
	// handoffs counts the connections the loop handed to the server.
	handoffs atomic.Int64
}

// serveLoop serves h. With events, the client watch's reads are reported
// on it (see faulthost.WatchedListener).
func serveLoop(t *testing.T, h http.Handler, events chan<- bool) *harness {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &harness{addr: ln.Addr().String()}
	var lis net.Listener = ln
	if events != nil {
		lis = faulthost.WatchedListener{Listener: ln, Events: events}
	}
	quiet := log.New(io.Discard, "", 0)
	ctx, cancel := context.WithCancel(context.Background())
	l := New(lis, Options{Handler: h, BaseContext: ctx, HeadTimeout: 10 * time.Second,
		IdleTimeout: time.Minute, MaxHeaderBytes: 1 << 20, ErrorLog: quiet})
	srv := &http.Server{Handler: h, ErrorLog: quiet, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			hs.handoffs.Add(1)
		}
	}}
	done := make(chan struct{}, 2)
	go func() { _ = l.Serve(); done <- struct{}{} }()
	go func() { _ = srv.Serve(l.Handoff()); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		_ = srv.Close()
		l.Close()
		<-done
		<-done
	})
	return hs
}

// dial opens a client connection, closed when the test ends.
func (hs *harness) dial(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", hs.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return c, bufio.NewReader(c)
}

// readAnswer reads one answer whole.
func readAnswer(t *testing.T, br *bufio.Reader, method string) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp.StatusCode, string(b)
}

// echo answers a request's method, path and protocol.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s %s %s %d %q", r.Method, r.URL.Path, r.Proto, r.ContentLength, b)
})

// TestLoopWatchKeepsAPipelinedByte: the byte a client watcher reads while
// a slow handler thinks is the start of the next request, and is served.
func TestLoopWatchKeepsAPipelinedByte(t *testing.T) {
	t.Parallel()
	heard := make(chan struct{}, 1)
	release := make(chan struct{})
	events := make(chan bool, 16)
	hs := serveLoop(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			heard <- struct{}{}
			<-release
		}
		fmt.Fprint(w, r.Method+" "+r.URL.Path)
	}), events)
	c, br := hs.dial(t)
	fmt.Fprint(c, "GET http://a/slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-heard
	// The watcher is reading the connection when the next request comes,
	// and its read returns with the request's first byte.
	faulthost.WaitWatch(t, events, true)
	fmt.Fprint(c, "GET http://a/next HTTP/1.1\r\nHost: a\r\n\r\n")
	faulthost.WaitWatch(t, events, false)
	close(release)
	for _, want := range []string{"GET /slow", "GET /next"} {
		if code, body := readAnswer(t, br, "GET"); code != 200 || body != want {
			t.Fatalf("answer %d %q, want %q", code, body, want)
		}
	}
	if n := hs.handoffs.Load(); n != 0 {
		t.Fatalf("%d connections handed off", n)
	}
}

// TestLoopHandsOffWhatItDoesNotServe: HTTP/1.0, a head larger than the
// loop's buffer and a Content-Length upload are served by http.Server, on
// a connection that first carried a request the loop served.
func TestLoopHandsOffWhatItDoesNotServe(t *testing.T) {
	t.Parallel()
	hs := serveLoop(t, echo, nil)
	big := strings.Repeat("x", 2*headBuffer)
	for i, tc := range []struct{ name, req, method, want string }{
		{"HTTP/1.0", "GET http://a/old HTTP/1.0\r\nHost: a\r\n\r\n", "GET", `GET /old HTTP/1.0 0 ""`},
		{"big head", "GET http://a/big HTTP/1.1\r\nHost: a\r\nX-Big: " + big + "\r\n\r\n", "GET", `GET /big HTTP/1.1 0 ""`},
		{"upload", "POST http://a/up HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi", "POST", `POST /up HTTP/1.1 2 "hi"`},
	} {
		c, br := hs.dial(t)
		fmt.Fprint(c, "GET http://a/first HTTP/1.1\r\nHost: a\r\n\r\n")
		if code, body := readAnswer(t, br, "GET"); code != 200 || body != `GET /first HTTP/1.1 0 ""` {
			t.Fatalf("%s: first: %d %q", tc.name, code, body)
		}
		if n := hs.handoffs.Load(); n != int64(i) {
			t.Fatalf("%s: the first request was handed off", tc.name)
		}
		fmt.Fprint(c, tc.req)
		if code, body := readAnswer(t, br, tc.method); code != 200 || body != tc.want {
			t.Fatalf("%s: %d %q, want %q", tc.name, code, body, tc.want)
		}
		if n := hs.handoffs.Load(); n != int64(i+1) {
			t.Fatalf("%s: %d hand-offs, want %d", tc.name, n, i+1)
		}
	}
}

// TestLoopEmptyBodyStaysOnTheLoop: a request that declares an empty body
// (Content-Length: 0, as many clients send with POST or DELETE) is served
// by the loop, and its connection stays there; a real upload, or a second
// Content-Length, is handed off.
func TestLoopEmptyBodyStaysOnTheLoop(t *testing.T) {
	t.Parallel()
	hs := serveLoop(t, echo, nil)
	c, br := hs.dial(t)
	for _, tc := range []struct{ req, method, want string }{
		{"POST http://a/a HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", "POST", `POST /a HTTP/1.1 0 ""`},
		{"DELETE http://a/b HTTP/1.1\r\nHost: a\r\ncontent-length:\t0 \r\n\r\n", "DELETE", `DELETE /b HTTP/1.1 0 ""`},
		{"GET http://a/c HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", "GET", `GET /c HTTP/1.1 0 ""`},
	} {
		fmt.Fprint(c, tc.req)
		if code, body := readAnswer(t, br, tc.method); code != 200 || body != tc.want {
			t.Fatalf("answer %d %q, want %q", code, body, tc.want)
		}
	}
	if n := hs.handoffs.Load(); n != 0 {
		t.Fatalf("%d connections handed off for requests with an empty body", n)
	}
	for i, req := range []string{
		"POST http://a/d HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
		"POST http://a/e HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
	} {
		c, br := hs.dial(t)
		fmt.Fprint(c, req)
		if _, err := http.ReadResponse(br, &http.Request{Method: "POST"}); err != nil {
			t.Fatal(err)
		}
		if n := hs.handoffs.Load(); n != int64(i+1) {
			t.Fatalf("after request %d: %d hand-offs, want %d", i, n, i+1)
		}
	}
}
