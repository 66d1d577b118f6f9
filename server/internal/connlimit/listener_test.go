package connlimit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
)

// serve serves h on a Listener over 127.0.0.1 capped at max, with the
// connection context the daemon gives its servers.
func serve(t *testing.T, max int, refused *atomic.Int64, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnContext: ConnContext}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(Listen(ln, max, false, func() { refused.Add(1) }))
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// get sends a GET on a new connection and reads its answer; the
// connection stays open until the test ends.
func get(t *testing.T, addr string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "GET"})
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c, resp
}

// TestListenerRefusesOverTheCap: a connection past the cap is answered
// 503 connection_limit_reached with a Retry-After, and a slot freed by a
// close serves again.
func TestListenerRefusesOverTheCap(t *testing.T) {
	t.Parallel()
	var refused atomic.Int64
	addr := serve(t, 2, &refused, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var held []net.Conn
	for range 2 {
		c, resp := get(t, addr)
		if resp.StatusCode != 200 {
			t.Fatalf("within the cap: %d", resp.StatusCode)
		}
		held = append(held, c)
	}
	_, resp := get(t, addr)
	if resp.StatusCode != 503 || !strings.Contains(resp.Header.Get("Proxy-Status"), "connection_limit_reached") ||
		resp.Header.Get("Retry-After") == "" || !resp.Close {
		t.Fatalf("past the cap: %d %v", resp.StatusCode, resp.Header)
	}
	if n := refused.Load(); n != 1 {
		t.Fatalf("%d refusals heard, want 1", n)
	}
	held[0].Close()
	waitfor.True(t, 5*time.Second, "the freed slot to serve again", func() bool {
		_, resp := get(t, addr)
		return resp.StatusCode == 200
	})
}

// TestBothFramingsSeesWhatNetHTTPDropped: a head with Content-Length and
// Transfer-Encoding reaches the handler chunked, its length dropped; the
// scan still says it had both. Either alone does not.
func TestBothFramingsSeesWhatNetHTTPDropped(t *testing.T) {
	t.Parallel()
	var refused atomic.Int64
	addr := serve(t, 0, &refused, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, BothFramings(r))
	}))
	for _, tc := range []struct {
		name, head string
		want       string
	}{
		{"both", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "true"},
		{"both, in another case", "transfer-encoding: chunked\r\ncontent-LENGTH: 5\r\n", "true"},
		{"chunked only", "Transfer-Encoding: chunked\r\n", "false"},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: a\r\n"+tc.head+"\r\n0\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.Close()
		if string(b) != tc.want {
			t.Errorf("%s: BothFramings %s, want %s", tc.name, b, tc.want)
		}
	}
}

func TestClientPrefix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7", "192.0.2.7/32"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
	} {
		if got := ClientPrefix(netip.MustParseAddr(tc.addr)).String(); got != tc.want {
			t.Errorf("%s counts under %s, want %s", tc.addr, got, tc.want)
		}
	}
}
