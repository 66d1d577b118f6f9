package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/waitfor"
)

// proxyClient is a client that sends everything through the fixture's
// proxy, with userinfo (for proxy credentials) when given.
func (f *fixture) proxyClient(t *testing.T, user *url.Userinfo, tlsConf *tls.Config) *http.Client {
	pu := &url.URL{Scheme: "http", Host: f.proxy, User: user}
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: tlsConf, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// rawConnect sends CONNECT target to the proxy and returns the answer and
// the connection (open if the answer was 200).
func (f *fixture) rawConnect(t *testing.T, target string, hdr ...string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", f.proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n", target, target)
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp, c, br
}

func TestProxyPlainHTTP(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen-Path", r.URL.RequestURI())
		fmt.Fprint(w, "via proxy")
	})
	resp, err := f.proxyClient(t, nil, nil).Get(up.URL + "/a/b?c=d")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "via proxy" || resp.Header.Get("X-Seen-Path") != "/a/b?c=d" {
		t.Fatalf("answer %d %q %v", resp.StatusCode, b, resp.Header)
	}
	r, _ := rec.last(t)
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection"} {
		if r.Header.Get(h) != "" {
			t.Fatalf("hop-by-hop header %s reached the upstream", h)
		}
	}
	// A request that is not absolute-URI is not for a forward proxy.
	a, err := testClient(t).Get("http://" + f.proxy + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	a.Body.Close()
	if a.StatusCode != http.StatusBadRequest {
		t.Fatalf("origin-form request to the proxy: %d", a.StatusCode)
	}
}

func TestProxyPlainHTTPTripsAndFastFails(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	c := f.proxyClient(t, nil, nil)
	codes := []int{}
	for range 3 {
		resp, err := c.Get(dead.URL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[502 502 503]" {
		t.Fatalf("codes %v, want two 502s then a fast-fail 503", codes)
	}
}

func TestProxyConnectTLS(t *testing.T) {
	t.Parallel()
	f := setup(t)
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secure hello")
	}))
	t.Cleanup(up.Close)
	tlsConf := up.Client().Transport.(*http.Transport).TLSClientConfig
	resp, err := f.proxyClient(t, nil, tlsConf).Get(up.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "secure hello" {
		t.Fatalf("through the tunnel: %d %q", resp.StatusCode, b)
	}
	ep := f.endpoint(t, up.URL)
	if ep.State != guard.Closed || ep.TicketsOut != 0 {
		t.Fatalf("after an answered tunnel: %+v", ep)
	}
}

// endpoint returns the guard's record for rawURL's origin.
func (f *fixture) endpoint(t *testing.T, rawURL string) guard.EndpointStatus {
	t.Helper()
	key, err := guard.Key(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	// The tunnel's handler may still be finishing when the client is done:
	// wait for its ticket to come back, then return the record either way
	// for the caller to judge.
	var rec guard.EndpointStatus
	found := false
	waitfor.Until(5*time.Second, func() bool {
		for _, e := range f.s.guard.Endpoints() {
			if e.Endpoint == key {
				rec, found = e, true
				return e.TicketsOut == 0
			}
		}
		return false
	})
	if !found {
		t.Fatalf("no guard record for %s", key)
	}
	return rec
}

func TestProxyConnectFailedDialCountsAndFastFails(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	var codes []int
	for range 3 {
		resp, _, _ := f.rawConnect(t, dead.Addr())
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Fatal("fast-fail without Retry-After")
		}
	}
	if fmt.Sprint(codes) != "[502 502 503]" {
		t.Fatalf("codes %v, want two 502s then a fast-fail 503", codes)
	}
	if st := f.s.guard.State("https://" + dead.Addr()); st != guard.Open {
		t.Fatalf("state %v after two refused dials", st)
	}
	// The proxy's histogram has each refusal under its own code.
	waitfor.True(t, 5*time.Second, "the refused CONNECTs timed under their codes", func() bool {
		text := string(f.do("GET", "/metrics", nil).body)
		return strings.Contains(text, `hostguard_proxy_request_duration_seconds_count{code="502",method="CONNECT"} 2`) &&
			strings.Contains(text, `hostguard_proxy_request_duration_seconds_count{code="503",method="CONNECT"} 1`)
	})
}

func TestProxyConnectSilentTargetCountsAsNotAnswering(t *testing.T) {
	t.Parallel()
	f := setup(t)
	silent := faulthost.NeverAnswers()
	t.Cleanup(silent.Close)
	for i := range 2 {
		resp, c, br := f.rawConnect(t, silent.Addr())
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT %d to a listening target: %d", i, resp.StatusCode)
		}
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		// The proxy closes the tunnel once the target has been silent for
		// the header timeout.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := br.ReadByte(); err == nil {
			t.Fatal("a byte came from a target that never answers")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the proxy did not close a tunnel whose target stayed silent")
		}
	}
	resp, _, _ := f.rawConnect(t, silent.Addr())
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third CONNECT to a silent target: %d, want 503", resp.StatusCode)
	}
}

func TestProxyConnectTunnelWithoutClientBytesIsInconclusive(t *testing.T) {
	t.Parallel()
	f := setup(t)
	silent := faulthost.NeverAnswers()
	t.Cleanup(silent.Close)
	for range 3 {
		resp, c, _ := f.rawConnect(t, silent.Addr())
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %d", resp.StatusCode)
		}
		c.Close() // the client gives up without saying anything
	}
	resp, _, _ := f.rawConnect(t, silent.Addr())
	if resp.StatusCode != 200 {
		t.Fatalf("tunnels the client closed unused counted against the target: %d", resp.StatusCode)
	}
}

func TestProxyAuthAndPolicy(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = "tok3n"; c.AllowPrivate = false })
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {})
	u, _ := url.Parse(up.URL)

	resp, _, _ := f.rawConnect(t, u.Host)
	if resp.StatusCode != http.StatusProxyAuthRequired || resp.Header.Get("Proxy-Authenticate") == "" {
		t.Fatalf("CONNECT without credentials: %d", resp.StatusCode)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("anyone:wrong"))
	if resp, _, _ := f.rawConnect(t, u.Host, "Proxy-Authorization", basic); resp.StatusCode != http.StatusProxyAuthRequired {
		t.Fatalf("CONNECT with a wrong password: %d", resp.StatusCode)
	}
	// Right credentials, but the destination is loopback: the policy says no.
	basic = "Basic " + base64.StdEncoding.EncodeToString([]byte("anyone:tok3n"))
	if resp, _, _ := f.rawConnect(t, u.Host, "Proxy-Authorization", basic); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT to loopback under the policy: %d", resp.StatusCode)
	}
	if resp, _, _ := f.rawConnect(t, "10.0.0.1:443", "Proxy-Authorization", "Bearer tok3n"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT to 10.0.0.1 under the policy: %d", resp.StatusCode)
	}
	hr, err := f.proxyClient(t, url.UserPassword("me", "tok3n"), nil).Get(up.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != http.StatusForbidden {
		t.Fatalf("plain HTTP to loopback under the policy: %d", hr.StatusCode)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) != 0 {
		t.Fatal("a refused request reached the upstream")
	}
	if strings.Contains(f.logs.String(), "tok3n") {
		t.Fatal("the token was logged")
	}
}

// TestProxyPolicyRefusalLeavesNoGuardRecord: a destination refused
// whatever DNS says (an IP literal, a localhost name) is refused before
// the guard is asked, on the proxy, CONNECT and fetch alike, so it takes
// no record the guard would have to keep or evict.
func TestProxyPolicyRefusalLeavesNoGuardRecord(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.AllowPrivate = false })
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {})
	u, _ := url.Parse(up.URL)
	port := u.Port()

	for _, target := range []string{"http://10.0.0.1/", up.URL + "/", "http://localhost:" + port + "/", "http://[::1]:" + port + "/"} {
		resp, err := f.proxyClient(t, nil, nil).Get(target)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("Proxy-Status"), "error=destination_ip_prohibited") {
			t.Fatalf("proxy to %s: %d, Proxy-Status %q", target, resp.StatusCode, resp.Header.Get("Proxy-Status"))
		}
		if a := f.do("GET", fetchPath(target), nil); a.status != http.StatusForbidden {
			t.Fatalf("fetch of %s: %d", target, a.status)
		}
	}
	for _, target := range []string{"10.0.0.1:443", u.Host, "localhost:" + port, "[::1]:443", "169.254.169.254:80"} {
		resp, _, _ := f.rawConnect(t, target)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("Proxy-Status"), "error=destination_ip_prohibited") {
			t.Fatalf("CONNECT %s: %d, Proxy-Status %q", target, resp.StatusCode, resp.Header.Get("Proxy-Status"))
		}
	}
	a := f.do("GET", "/v1/guard", nil)
	if a.status != 200 {
		t.Fatalf("listing endpoints: %d %s", a.status, a.body)
	}
	if eps, _ := a.json(t)["endpoints"].([]any); len(eps) != 0 {
		t.Fatalf("policy refusals left guard records: %s", a.body)
	}
	if n := f.s.guard.Len(); n != 0 {
		t.Fatalf("the guard holds %d records after refusals only", n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) != 0 {
		t.Fatal("a refused request reached the upstream")
	}
}

// TestFastFailDoesNoLookupAndNoDial trips endpoints named by a host name
// through the proxy, CONNECT and fetch, then counts the dialer's calls
// (a name is resolved inside them) across the fast-fails: none.
func TestFastFailDoesNoLookupAndNoDial(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) {
		// The guard's recovery probes dial too; keep them out of the count.
		c.Guard.Probe = func(context.Context, string) error { return errors.New("no probes in this test") }
	})
	proxied, tunnelled, fetched := faulthost.ClosedPort(), faulthost.ClosedPort(), faulthost.ClosedPort()
	for _, h := range []*faulthost.Host{proxied, tunnelled, fetched} {
		t.Cleanup(h.Close)
	}
	byName := func(h *faulthost.Host) string {
		_, port, _ := net.SplitHostPort(h.Addr())
		return "localhost:" + port
	}
	c := f.proxyClient(t, nil, nil)
	proxyGet := func() int {
		resp, err := c.Get("http://" + byName(proxied) + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	connect := func() int {
		resp, _, _ := f.rawConnect(t, byName(tunnelled))
		resp.Body.Close()
		return resp.StatusCode
	}
	fetch := func() int { return f.do("GET", fetchPath("http://"+byName(fetched)+"/x"), nil).status }

	for name, try := range map[string]func() int{"proxy": proxyGet, "CONNECT": connect, "fetch": fetch} {
		start := f.s.dialer.Dials()
		for i := range 2 {
			if code := try(); code != http.StatusBadGateway {
				t.Fatalf("%s, refused dial %d: %d, want 502", name, i+1, code)
			}
		}
		before := f.s.dialer.Dials()
		if before-start < 2 {
			// The count must see real dials, or its zero below proves nothing.
			t.Fatalf("%s: two refused requests made %d dials", name, before-start)
		}
		for i := range 3 {
			if code := try(); code != http.StatusServiceUnavailable {
				t.Fatalf("%s, fast-fail %d: %d, want 503", name, i+1, code)
			}
		}
		if n := f.s.dialer.Dials() - before; n != 0 {
			t.Fatalf("%s: the fast-fails made %d dials (each with its lookup)", name, n)
		}
	}
}

// TestProxySlowReaderIsNotCut: the idle timeout is the upstream's to
// keep. A client that stops reading for longer than it holds the proxy in
// its write, and the upstream, which sent everything at once, must not be
// cut for that.
func TestProxySlowReaderIsNotCut(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const size = 32 << 20 // well past the loopback socket buffers
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for range size / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(up.Close)
	resp, err := f.proxyClient(t, nil, nil).Get(up.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	// The pause is what the test is about: three idle timeouts without a
	// read by the client, while the proxy's write to it is blocked.
	time.Sleep(3 * 300 * time.Millisecond)
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || n+1 != size {
		t.Fatalf("after a slow reader's pause: read %d of %d bytes, err %v", n+1, size, err)
	}
}
