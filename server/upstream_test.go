package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
)

// proxyDo sends one request through the proxy on a connection of its own
// and returns the status and body.
func (f *fixture) proxyDo(t *testing.T, method, rawURL string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.proxyClient(t, nil, nil).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, rawURL, err)
	}
	return resp.StatusCode, string(b)
}

// TestPlainUpstreamStaleConnectionIsRetriedOnce: an upstream that closes a
// kept-alive connection, before or just after the next request arrives,
// is asked again on a fresh connection, and the client sees its answer;
// the guard counts nothing against it. (The pool's other rules are tested
// in server/internal/upstream.)
func TestPlainUpstreamStaleConnectionIsRetriedOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		hears bool // the stale connection reads the second request before closing
		want  string
	}{
		{name: "closed while idle", want: "0:GET /1 1:GET /2"},
		{name: "closed on hearing the request", hears: true, want: "0:GET /1 0:GET /2 1:GET /2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			closed := make(chan struct{})
			up := faulthost.NewScripted(t, func(s *faulthost.Scripted, n int, c net.Conn, br *bufio.Reader) {
				if _, ok := s.Read(n, br); !ok {
					return
				}
				faulthost.AnswerOK(c, fmt.Sprint("answer ", n))
				if n == 0 {
					if tc.hears {
						s.Read(n, br)
					}
					c.Close()
					close(closed)
					return
				}
				for {
					if _, ok := s.Read(n, br); !ok {
						return
					}
					faulthost.AnswerOK(c, fmt.Sprint("answer ", n))
				}
			})
			if code, body := f.proxyDo(t, "GET", up.URL()+"/1"); code != 200 || body != "answer 0" {
				t.Fatalf("first: %d %q", code, body)
			}
			if !tc.hears {
				<-closed
			}
			if code, body := f.proxyDo(t, "GET", up.URL()+"/2"); code != 200 || body != "answer 1" {
				t.Fatalf("second: %d %q", code, body)
			}
			if got := up.Seen(); got != tc.want {
				t.Fatalf("upstream saw %q, want %q", got, tc.want)
			}
			if ep := f.endpoint(t, up.URL()); ep.Failures != 0 || ep.State != guard.Closed {
				t.Fatalf("a stale connection counted: %+v", ep)
			}
		})
	}
}

// rawProxyConn is a client connection to the proxy for writing requests
// by hand.
func (f *fixture) rawProxyConn(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", f.proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func readAnswer(t *testing.T, br *bufio.Reader, method string) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer to %s: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body of the answer to %s: %v", method, err)
	}
	return resp.StatusCode, string(b)
}

func TestProxyPipelinedRequests(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.URL.Path) })
	c, br := f.rawProxyConn(t)
	host := strings.TrimPrefix(up.URL, "http://")
	var reqs strings.Builder
	for _, p := range []string{"/a", "/b", "/c"} {
		fmt.Fprintf(&reqs, "GET %s%s HTTP/1.1\r\nHost: %s\r\n\r\n", up.URL, p, host)
	}
	// All three in one write: the proxy must answer them in order.
	if _, err := io.WriteString(c, reqs.String()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/a", "/b", "/c"} {
		if code, body := readAnswer(t, br, "GET"); code != 200 || body != p {
			t.Fatalf("answer for %s: %d %q", p, code, body)
		}
	}
}

// TestProxyKeepAliveMixesPlainConnectAndUpload: one client connection
// carries a plain GET, a chunked upload and then a CONNECT tunnel.
func TestProxyKeepAliveMixesPlainConnectAndUpload(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Method+" "+r.URL.Path) })
	c, br := f.rawProxyConn(t)
	host := strings.TrimPrefix(up.URL, "http://")
	fmt.Fprintf(c, "GET %s/plain HTTP/1.1\r\nHost: %s\r\n\r\n", up.URL, host)
	if code, body := readAnswer(t, br, "GET"); code != 200 || body != "GET /plain" {
		t.Fatalf("plain GET: %d %q", code, body)
	}
	fmt.Fprintf(c, "POST %s/upload HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", up.URL, host)
	if code, body := readAnswer(t, br, "POST"); code != 200 || body != "POST /upload" {
		t.Fatalf("chunked upload: %d %q", code, body)
	}
	if _, got := rec.last(t); got != "hello" {
		t.Fatalf("upstream got the upload %q", got)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT after plain requests: %v %v", resp, err)
	}
	// Through the tunnel, the upstream is spoken to directly.
	fmt.Fprintf(c, "GET /tunnelled HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
	if code, body := readAnswer(t, br, "GET"); code != 200 || body != "GET /tunnelled" {
		t.Fatalf("through the tunnel: %d %q", code, body)
	}
}

// TestShutdownFinishesInFlightProxyRequest: the drain waits for a proxied
// plain request whose upstream is still thinking, and its client gets the
// answer.
func TestShutdownFinishesInFlightProxyRequest(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.HeaderTimeout = 10 * time.Second })
	gate := faulthost.Gated(200)
	t.Cleanup(gate.Close)
	got := make(chan int, 1)
	go func() {
		resp, err := f.proxyClient(t, nil, nil).Get(gate.URL() + "/")
		if err != nil {
			got <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := gate.Await(ctx, 1); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.stop() }()
	waitRefused(t, f.proxy)
	select {
	case <-stopped:
		t.Fatal("Serve returned while a proxied request was in flight")
	default:
	}
	gate.Release()
	if code := <-got; code != 200 {
		t.Fatalf("in-flight proxied request during shutdown: %d", code)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if ep := f.endpoint(t, gate.URL()); ep.TicketsOut != 0 {
		t.Fatalf("tickets out after shutdown: %+v", ep)
	}
}
