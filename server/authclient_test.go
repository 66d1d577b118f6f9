package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// clientFrom is an HTTP client whose connections come from local, an
// address of the loopback interface other than 127.0.0.1, so that the
// daemon sees another client.
func clientFrom(t *testing.T, local string) *http.Client {
	t.Helper()
	needLoopbackAddr(t, local)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// needLoopbackAddr skips the test where local is not an address of this
// host: Linux answers on all of 127.0.0.0/8, macOS only on 127.0.0.1.
func needLoopbackAddr(t *testing.T, local string) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(local, "0"))
	if err != nil {
		t.Skipf("%s is not an address of this host: %v", local, err)
	}
	ln.Close()
}

// surface is one place a credential is presented: it sends cred (a
// token) from local and returns the status.
type surface struct {
	name string
	send func(t *testing.T, local, cred string) int
}

func authSurfaces(f *fixture, upstream string) []surface {
	api := func(t *testing.T, local, cred string) int {
		req, _ := http.NewRequest("GET", f.api+"/v1/guard", nil)
		req.Header.Set("Authorization", "Bearer "+cred)
		return statusOf(t, clientFrom(t, local), req)
	}
	login := func(t *testing.T, local, cred string) int {
		req, _ := http.NewRequest("POST", f.api+"/login", strings.NewReader("token="+cred))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", f.api)
		return statusOf(t, clientFrom(t, local), req)
	}
	proxy := func(header func(cred string) string) func(t *testing.T, local, cred string) int {
		return func(t *testing.T, local, cred string) int {
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
			c, err := d.DialContext(context.Background(), "tcp", f.proxy)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			host := strings.TrimPrefix(upstream, "http://")
			fmt.Fprintf(c, "GET %s/x HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: %s\r\nConnection: close\r\n\r\n", upstream, host, header(cred))
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "GET"})
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
	}
	return []surface{
		{"api bearer", api},
		{"proxy bearer", proxy(func(cred string) string { return "Bearer " + cred })},
		{"proxy basic", proxy(func(cred string) string {
			return "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+cred))
		})},
		{"login form", login},
	}
}

func statusOf(t *testing.T, c *http.Client, req *http.Request) int {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestNoClientLocksOutAnother: a client that sends more wrong tokens
// than the limit, on every surface, gets 429 for its wrong ones; another
// client keeps being served with the right token and keeps its own
// allowance for wrong ones (401, not 429), and the guesser's own right
// token is accepted too.
func TestNoClientLocksOutAnother(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = loginToken })
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(up.Close)
	surfaces := authSurfaces(f, up.URL)
	const guesser, holder = "127.0.0.2", "127.0.0.1"
	needLoopbackAddr(t, guesser)

	rightStatus := map[string]int{"api bearer": 200, "proxy bearer": 200, "proxy basic": 200, "login form": http.StatusSeeOther}
	wrongStatus := map[string]int{"api bearer": 401, "proxy bearer": 407, "proxy basic": 407, "login form": 401}
	for i := range authBurst + 2 {
		s := surfaces[i%len(surfaces)]
		s.send(t, guesser, fmt.Sprintf("guess-%d", i))
	}
	for _, s := range surfaces {
		if got := s.send(t, guesser, "guess-again"); got != http.StatusTooManyRequests {
			t.Errorf("%s: the guesser's wrong token got %d, want 429", s.name, got)
		}
		if got := s.send(t, holder, loginToken); got != rightStatus[s.name] {
			t.Errorf("%s: the other client's right token got %d, want %d", s.name, got, rightStatus[s.name])
		}
		if got := s.send(t, guesser, loginToken); got != rightStatus[s.name] {
			t.Errorf("%s: the guesser's own right token got %d, want %d", s.name, got, rightStatus[s.name])
		}
	}
	// The other client's own allowance is untouched.
	for _, s := range surfaces {
		if got := s.send(t, holder, "a-stale-token"); got != wrongStatus[s.name] {
			t.Errorf("%s: the other client's wrong token got %d, want %d", s.name, got, wrongStatus[s.name])
		}
	}
}

func TestAuthClientKey(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"127.0.0.1:5000":           "127.0.0.1/32",
		"[::ffff:10.1.2.3]:80":     "10.1.2.3/32",
		"[2001:db8::1]:443":        "2001:db8::/64",
		"[2001:db8::ffff:1]:1":     "2001:db8::/64",
		"[2001:db8:0:1::1]:1":      "2001:db8:0:1::/64",
		"[fe80::1%eth0]:1":         "fe80::/64",
		"not an address":           "invalid Prefix",
		"@":                        "invalid Prefix",
		"[2001:db8::1%zone]:65535": "2001:db8::/64",
	}
	for in, want := range cases {
		if got := authClientKey(in).String(); got != want {
			t.Errorf("authClientKey(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestAuthLimitTableIsBounded: a guesser with more addresses than the
// table holds keeps it at maxAuthClients, and counts that ran out make
// room first.
func TestAuthLimitTableIsBounded(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	l := &authLimit{now: clock.Now}
	base := netip.MustParseAddr("10.0.0.0").As4()
	key := func(i int) netip.Prefix {
		b := base
		b[1], b[2], b[3] = byte(i>>16), byte(i>>8), byte(i)
		return netip.PrefixFrom(netip.AddrFrom4(b), 32)
	}
	for i := range maxAuthClients + 100 {
		l.failed(key(i))
	}
	if n := l.size(); n != maxAuthClients {
		t.Fatalf("%d clients counted, want %d", n, maxAuthClients)
	}
	// A blocked client stays counted while newer ones come and go.
	blocked := netip.MustParsePrefix("192.0.2.1/32")
	for range authBurst {
		l.failed(blocked)
	}
	for i := range 200 {
		l.failed(key(maxAuthClients + 100 + i))
	}
	if l.wait(blocked) <= 0 {
		t.Fatal("a blocked client was forgotten before the clients closest to their end")
	}
	clock.Advance(authBurst * authRefill)
	l.failed(key(1 << 20)) // never counted before
	if n := l.size(); n != 1 {
		t.Fatalf("%d clients counted after every count ran out, want 1", n)
	}
}
