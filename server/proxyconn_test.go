package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/waitfor"
)

// TestProxyClientLeavingIsAGiveUp: a client that closes its connection
// while a plain request's upstream is silent has given up; after
// the wait floor that is a host-level timeout, sooner it is inconclusive.
func TestProxyClientLeavingIsAGiveUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		wait     time.Duration
		failures int
	}{
		{name: "after the wait floor", wait: 300 * time.Millisecond, failures: 1},
		{name: "sooner", wait: 0, failures: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, func(c *Config) {
				c.HeaderTimeout = 30 * time.Second
				c.Guard.WaitFloor = 200 * time.Millisecond
			})
			silent := faulthost.NeverAnswers()
			t.Cleanup(silent.Close)
			c, _ := f.rawProxyConn(t)
			host := strings.TrimPrefix(silent.URL(), "http://")
			fmt.Fprintf(c, "GET %s/x HTTP/1.1\r\nHost: %s\r\n\r\n", silent.URL(), host)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := silent.Await(ctx, 1); err != nil {
				t.Fatal(err)
			}
			// The give-up rule is about how long the upstream owed the
			// answer, so time has to pass here.
			time.Sleep(tc.wait)
			c.Close()
			key, _ := guard.Key(silent.URL())
			var ep guard.EndpointStatus
			waitfor.True(t, 5*time.Second, "the give-up to settle its ticket", func() bool {
				for _, e := range f.s.guard.Endpoints() {
					if e.Endpoint == key {
						ep = e
						return e.TicketsOut == 0
					}
				}
				return false
			})
			if ep.Failures != tc.failures || (tc.failures > 0 && ep.LastFailure != failure.Timeout) {
				t.Fatalf("after the client left: %+v, want %d failures", ep, tc.failures)
			}
		})
	}
}

// TestProxyWatchKeepsAPipelinedByte: the byte a client watcher reads while
// a slow upstream thinks is the start of the next request, and is served.
func TestProxyWatchKeepsAPipelinedByte(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.HeaderTimeout = 10 * time.Second })
	heard := make(chan struct{}, 1)
	release := make(chan struct{})
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			heard <- struct{}{}
			<-release
		}
		fmt.Fprint(w, r.Method+" "+r.URL.Path)
	})
	events := make(chan bool, 4)
	hook := func(reading bool) { events <- reading }
	f.s.watchHook.Store(&hook)
	c, br := f.rawProxyConn(t)
	host := strings.TrimPrefix(up.URL, "http://")
	fmt.Fprintf(c, "GET %s/slow HTTP/1.1\r\nHost: %s\r\n\r\n", up.URL, host)
	<-heard
	// The watcher is reading the connection when the next request comes,
	// and its read returns with the request's first byte.
	waitWatch(t, events, true)
	fmt.Fprintf(c, "GET %s/next HTTP/1.1\r\nHost: %s\r\n\r\n", up.URL, host)
	waitWatch(t, events, false)
	close(release)
	for _, want := range []string{"GET /slow", "GET /next"} {
		if code, body := readAnswer(t, br, "GET"); code != 200 || body != want {
			t.Fatalf("answer %d %q, want %q", code, body, want)
		}
	}
}

// TestProxyHandsOffWhatItDoesNotServe: HTTP/1.0, a head larger than the
// fast path's buffer and a Content-Length upload are served by
// http.Server, on a connection that first carried a fast-path request.
func TestProxyHandsOffWhatItDoesNotServe(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Method+" "+r.URL.Path+" "+r.Proto)
	})
	host := strings.TrimPrefix(up.URL, "http://")
	big := strings.Repeat("x", 2*proxyHeadBuffer)
	for _, tc := range []struct{ name, req, method, want string }{
		{"HTTP/1.0", "GET %s/old HTTP/1.0\r\nHost: %s\r\n\r\n", "GET", "GET /old HTTP/1.1"},
		{"big head", "GET %s/big HTTP/1.1\r\nHost: %s\r\nX-Big: " + big + "\r\n\r\n", "GET", "GET /big HTTP/1.1"},
		{"upload", "POST %s/up HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\nhi", "POST", "POST /up HTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br := f.rawProxyConn(t)
			fmt.Fprintf(c, "GET %s/first HTTP/1.1\r\nHost: %s\r\n\r\n", up.URL, host)
			if code, body := readAnswer(t, br, "GET"); code != 200 || body != "GET /first HTTP/1.1" {
				t.Fatalf("first: %d %q", code, body)
			}
			fmt.Fprintf(c, tc.req, up.URL, host)
			if code, body := readAnswer(t, br, tc.method); code != 200 || body != tc.want {
				t.Fatalf("%s: %d %q", tc.name, code, body)
			}
		})
	}
}

// TestProxyEmptyBodyStaysOnTheFastPath: a request that declares an empty
// body (Content-Length: 0, as many clients send with POST or DELETE) is
// served by the proxy's own loop, and its connection stays there; a real
// upload, or a second Content-Length, is handed off.
func TestProxyEmptyBodyStaysOnTheFastPath(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %d %q", r.Method, r.URL.Path, r.ContentLength, b)
	})
	host := strings.TrimPrefix(up.URL, "http://")
	c, br := f.rawProxyConn(t)
	for _, tc := range []struct{ req, method, want string }{
		{"POST %s/a HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n", "POST", `POST /a 0 ""`},
		{"DELETE %s/b HTTP/1.1\r\nHost: %s\r\ncontent-length:\t0 \r\n\r\n", "DELETE", `DELETE /b 0 ""`},
		{"GET %s/c HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n", "GET", `GET /c 0 ""`},
	} {
		fmt.Fprintf(c, tc.req, up.URL, host)
		if code, body := readAnswer(t, br, tc.method); code != 200 || body != tc.want {
			t.Fatalf("answer %d %q, want %q", code, body, tc.want)
		}
	}
	if n := f.s.proxyHandoffs.Load(); n != 0 {
		t.Fatalf("%d connections handed off for requests with an empty body", n)
	}
	for i, req := range []string{
		"POST %s/d HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\nhi",
		"POST %s/e HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
	} {
		c, br := f.rawProxyConn(t)
		fmt.Fprintf(c, req, up.URL, host)
		if _, err := http.ReadResponse(br, &http.Request{Method: "POST"}); err != nil {
			t.Fatal(err)
		}
		if n := f.s.proxyHandoffs.Load(); n != int64(i+1) {
			t.Fatalf("after request %d: %d hand-offs, want %d", i, n, i+1)
		}
	}
}

// TestProxyFastPathAnswersAsHTTPServerDid: the daemon's own answers on
// the fast path keep their framing and headers, and Connection: close is
// honoured.
func TestProxyFastPathAnswersAsHTTPServerDid(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = "s3cret" })
	c, br := f.rawProxyConn(t)
	fmt.Fprintf(c, "GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusProxyAuthRequired || resp.ContentLength != int64(len(b)) ||
		resp.Header.Get("Proxy-Authenticate") == "" || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("Date") == "" || !strings.Contains(string(b), "token") {
		t.Fatalf("answer %d %v %q", resp.StatusCode, resp.Header, b)
	}
	fmt.Fprintf(c, "GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\nConnection: close\r\n\r\n")
	resp, err = http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !resp.Close {
		t.Fatalf("asked to close, the answer says %v", resp.Header)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after Connection: close the connection stayed open: %v", err)
	}
}

func waitWatch(t *testing.T, events <-chan bool, want bool) {
	t.Helper()
	select {
	case got := <-events:
		if got != want {
			t.Fatalf("client watch event %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no client watch event %v within 10 s", want)
	}
}

// TestProxyConnectionCarriesEachRequestsTimers: one keep-alive connection
// carries a request whose client watch read the connection, requests
// whose timers were stopped before they fired, and one whose header wait
// fired; every later request is still served whole, and the last one's
// client leaving is still noticed as a give-up. (A connection keeps its
// watch, its context and pooled header timers across requests.)
func TestProxyConnectionCarriesEachRequestsTimers(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) {
		c.HeaderTimeout = 300 * time.Millisecond
		c.Guard.WaitFloor = 100 * time.Millisecond
	})
	heard := make(chan struct{}, 1)
	release := make(chan struct{})
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			heard <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/late":
			// Answers only once the proxy has given up on it.
			<-r.Context().Done()
		}
		fmt.Fprint(w, r.Method+" "+r.URL.Path)
	})
	events := make(chan bool, 16)
	hook := func(reading bool) {
		select {
		case events <- reading:
		default:
		}
	}
	f.s.watchHook.Store(&hook)
	c, br := f.rawProxyConn(t)
	send := func(base, path string) {
		fmt.Fprintf(c, "GET %s%s HTTP/1.1\r\nHost: %s\r\n\r\n", base, path, strings.TrimPrefix(base, "http://"))
	}
	want := func(code int, body string) {
		t.Helper()
		got, b := readAnswer(t, br, "GET")
		if got != code || (body != "" && b != body) {
			t.Fatalf("answer %d %q, want %d %q", got, b, code, body)
		}
	}

	send(up.URL, "/slow")
	<-heard
	waitWatch(t, events, true)
	close(release)
	waitWatch(t, events, false)
	want(200, "GET /slow")
	for range 3 {
		send(up.URL, "/fast")
		want(200, "GET /fast")
	}
	send(up.URL, "/late")
	want(http.StatusGatewayTimeout, "")
	for range 3 {
		send(up.URL, "/fast")
		want(200, "GET /fast")
	}

	silent := faulthost.NeverAnswers()
	t.Cleanup(silent.Close)
	// Its own header timeout is long: only the client's leaving can end it.
	fmt.Fprintf(c, "GET %s/x HTTP/1.1\r\nHost: %s\r\nHostguard-Timeout: 30\r\n\r\n", silent.URL(), strings.TrimPrefix(silent.URL(), "http://"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := silent.Await(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The give-up rule is about how long the upstream owed the answer.
	time.Sleep(200 * time.Millisecond)
	c.Close()
	key, _ := guard.Key(silent.URL())
	waitfor.True(t, 5*time.Second, "the client's leaving to count against the silent upstream", func() bool {
		for _, e := range f.s.guard.Endpoints() {
			if e.Endpoint == key {
				return e.TicketsOut == 0 && e.Failures == 1 && e.LastFailure == failure.Timeout
			}
		}
		return false
	})
}
