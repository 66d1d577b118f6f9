package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
)

// TestProxyHeadsAreDueInTime: a connection that sends no byte, or only
// part of a head, is closed once the head timeout has passed, on the
// fast path and after a hand-off; it used to be held for the idle
// timeout (2 minutes).
func TestProxyHeadsAreDueInTime(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.headTimeout = 200 * time.Millisecond })
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {})
	host := strings.TrimPrefix(up.URL, "http://")
	for _, tc := range []struct{ name, before, partial string }{
		{"silent", "", ""},
		{"part of a head", "", "GET " + up.URL + "/ HTTP/1.1\r\nHost: "},
		{"part of a second head", "GET " + up.URL + "/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n", "GET " + up.URL + "/ HT"},
		{"part of a head after a hand-off", "GET " + up.URL + "/ HTTP/1.0\r\nHost: " + host + "\r\nConnection: keep-alive\r\n\r\n", "GET " + up.URL + "/ HT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, br := f.rawProxyConn(t)
			if tc.before != "" {
				fmt.Fprint(c, tc.before)
				if code, _ := readAnswer(t, br, "GET"); code != 200 {
					t.Fatalf("the first request: %d", code)
				}
			}
			fmt.Fprint(c, tc.partial)
			// rawProxyConn's deadline (10 s) is far past the head
			// timeout and far short of the idle timeout.
			b, err := io.ReadAll(br)
			if err != nil {
				t.Fatalf("the proxy held the connection: %v (read %q)", err, b)
			}
		})
	}
}

// dialFrom connects to addr from the loopback address local.
func dialFrom(t *testing.T, local, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// TestProxyOneAddressHoldsHalfTheConnections: past half of MaxConns, a
// client address is refused 503 connection_limit_reached, while another
// address is still served, and a slot it frees is its own again.
func TestProxyOneAddressHoldsHalfTheConnections(t *testing.T) {
	t.Parallel()
	needLoopbackAddr(t, "127.0.0.2")
	f := setup(t, func(c *Config) { c.MaxConns = 4 })
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {})
	host := strings.TrimPrefix(up.URL, "http://")
	get := fmt.Sprintf("GET %s/ HTTP/1.1\r\nHost: %s\r\n\r\n", up.URL, host)
	answer := func(c net.Conn, br *bufio.Reader) (*http.Response, error) {
		fmt.Fprint(c, get)
		resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	var held []net.Conn
	for range 2 {
		c, br := dialFrom(t, "127.0.0.1", f.proxy)
		if resp, err := answer(c, br); err != nil || resp.StatusCode != 200 {
			t.Fatalf("a connection within the share: %v %v", resp, err)
		}
		held = append(held, c)
	}
	c, br := dialFrom(t, "127.0.0.1", f.proxy)
	resp, err := answer(c, br)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || !strings.Contains(resp.Header.Get("Proxy-Status"), "connection_limit_reached") {
		t.Fatalf("past the share: %d %v", resp.StatusCode, resp.Header)
	}
	c, br = dialFrom(t, "127.0.0.2", f.proxy)
	if resp, err := answer(c, br); err != nil || resp.StatusCode != 200 {
		t.Fatalf("another address: %v %v", resp, err)
	}
	held[0].Close()
	waitfor.True(t, 5*time.Second, "the freed slot to serve its address again", func() bool {
		c, br := dialFrom(t, "127.0.0.1", f.proxy)
		resp, err := answer(c, br)
		c.Close()
		return err == nil && resp.StatusCode == 200
	})
}

// TestHeadsOverTheBoundAre431: a request head over MaxHeaderBytes is
// answered 431 on the API and on the proxy (whose fast path hands it
// off), and never forwarded; one under the bound is served.
func TestHeadsOverTheBoundAre431(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {})
	host := strings.TrimPrefix(up.URL, "http://")
	apiHost := strings.TrimPrefix(f.api, "http://")
	over := strings.Repeat("x", DefaultMaxHeaderBytes+8<<10)
	under := strings.Repeat("x", DefaultMaxHeaderBytes/2)
	for _, tc := range []struct {
		name, addr, req, pad string
		want                 int
	}{
		{"API", apiHost, "GET /healthz HTTP/1.1\r\nHost: " + apiHost + "\r\n", over, 431},
		{"proxy", f.proxy, "GET " + up.URL + "/big HTTP/1.1\r\nHost: " + host + "\r\n", over, 431},
		{"proxy, an upload", f.proxy, "POST " + up.URL + "/big HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 0\r\n", over, 431},
		{"API under the bound", apiHost, "GET /healthz HTTP/1.1\r\nHost: " + apiHost + "\r\n", under, 200},
		{"proxy under the bound", f.proxy, "GET " + up.URL + "/small HTTP/1.1\r\nHost: " + host + "\r\n", under, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br := dialFrom(t, "127.0.0.1", tc.addr)
			// The head is written while the answer is read: the daemon
			// answers before it has read a head that is too big.
			go fmt.Fprintf(c, "%sX-Pad: %s\r\n\r\n", tc.req, tc.pad)
			resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("answered %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == 431 {
				if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && !isReset(err) {
					t.Fatalf("after 431 the connection stayed open: %v", err)
				}
			}
		})
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.reqs {
		if r.URL.Path == "/big" {
			t.Fatal("a head over the bound was forwarded")
		}
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}
