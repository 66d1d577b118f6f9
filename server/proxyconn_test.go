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

// TestProxyConnectionCarriesEachRequestsTimers: one keep-alive connection
// carries a request whose client watch read the connection, requests
// whose timers were stopped before they fired, and one whose header wait
// fired; every later request is still served whole, and the last one's
// client leaving is still noticed as a give-up. (A connection keeps its
// watch, its context and pooled header timers across requests.)
func TestProxyConnectionCarriesEachRequestsTimers(t *testing.T) {
	t.Parallel()
	events := make(chan bool, 16)
	f := setupProxyOn(t, faulthost.WatchedListener{Listener: listen(t), Events: events}, func(c *Config) {
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
	faulthost.WaitWatch(t, events, true)
	close(release)
	faulthost.WaitWatch(t, events, false)
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
