package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// raw sends one request with exactly the headers given and returns the
// status, headers and body.
func (d *daemonProc) raw(t *testing.T, method, path, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.api+path, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (d *daemonProc) paused(t *testing.T) bool {
	t.Helper()
	var rep struct {
		Paused bool `json:"paused"`
	}
	d.call(t, "GET", "/v1/budget", nil, 200, &rep)
	return rep.Paused
}

func TestBrowserCannotDriveTheAPI(t *testing.T) {
	bin := buildBinary(t)
	d := start(t, bin, filepath.Join(t.TempDir(), "b.db"), "--allowed-hosts", "hostguard.test,other.test:1")
	apiHost := strings.TrimPrefix(d.api, "http://")
	_, port, _ := net.SplitHostPort(apiHost)
	pause := `{"paused":true}`
	for _, c := range []struct {
		name   string
		status int
		hdr    []string
	}{
		{"rebound host", 421, []string{"Host", "attacker-rebind.example:" + port, "Content-Type", "application/json"}},
		{"allowed name on another port", 421, []string{"Host", "other.test:2", "Content-Type", "application/json"}},
		{"foreign origin", 403, []string{"Origin", "https://evil.example", "Content-Type", "application/json"}},
		{"null origin", 403, []string{"Origin", "null", "Content-Type", "application/json"}},
		{"another local port", 403, []string{"Origin", "http://127.0.0.1:1", "Content-Type", "application/json"}},
		{"cross-site fetch", 403, []string{"Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"}},
		{"text/plain", 415, []string{"Content-Type", "text/plain"}},
		{"form", 415, []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"no type", 415, nil},
	} {
		status, _, body := d.raw(t, "POST", "/v1/budget/pause", pause, c.hdr...)
		if status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, status, body, c.status)
		}
	}
	if d.paused(t) {
		t.Fatal("a refused request paused the budget")
	}
	// The daemon's own origin, its names and the allowed ones pass.
	for _, hdr := range [][]string{
		{"Origin", d.api, "Sec-Fetch-Site", "same-origin", "Content-Type", "application/json; charset=utf-8"},
		{"Host", "localhost:" + port, "Content-Type", "application/json"},
		{"Host", "hostguard.test:" + port, "Content-Type", "application/json"},
		{"Host", "other.test:1", "Content-Type", "application/json"},
	} {
		if status, _, body := d.raw(t, "POST", "/v1/budget/pause", `{"paused":false}`, hdr...); status != 200 {
			t.Errorf("%v: %d %s", hdr, status, body)
		}
	}
	// The status page in a browser: a top-level navigation.
	status, h, body := d.raw(t, "GET", "/", "", "Sec-Fetch-Site", "none", "Accept", "text/html")
	if status != 200 || !strings.Contains(h.Get("Content-Type"), "text/html") {
		t.Fatalf("status page: %d %s %.200s", status, h.Get("Content-Type"), body)
	}

	// A fetched page cannot run under the API's origin.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Security-Policy", "default-src *")
		fmt.Fprint(w, "<script>fetch('/v1/items')</script>")
	}))
	t.Cleanup(up.Close)
	status, h, _ = d.raw(t, "GET", "/v1/fetch?url="+url.QueryEscape(up.URL+"/"), "")
	if status != 200 {
		t.Fatalf("fetch: %d", status)
	}
	if !containsValue(h.Values("Content-Security-Policy"), "sandbox") || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("fetched answer headers: %v", h)
	}
}

func containsValue(vv []string, want string) bool {
	for _, v := range vv {
		if v == want {
			return true
		}
	}
	return false
}

func TestProxyAndFetchRefuseTheDaemonItself(t *testing.T) {
	bin := buildBinary(t)
	// --allow-private is on (start sets it): the loop is refused anyway.
	d := start(t, bin, filepath.Join(t.TempDir(), "l.db"))
	for _, target := range []string{d.api + "/healthz", "http://" + d.proxy + "/", "http://localhost:" + strings.Split(d.proxy, ":")[1] + "/"} {
		status, h, body := d.raw(t, "GET", "/v1/fetch?url="+url.QueryEscape(target), "")
		if status != http.StatusLoopDetected || !strings.Contains(h.Get("Proxy-Status"), "proxy_loop_detected") {
			t.Errorf("fetch %s: %d %v %s", target, status, h.Get("Proxy-Status"), body)
		}
	}
	pu, _ := url.Parse("http://" + d.proxy)
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(d.api + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected || !strings.Contains(resp.Header.Get("Proxy-Status"), "proxy_loop_detected") {
		t.Fatalf("proxy to the API: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestDestinationPolicyAtTheDaemon(t *testing.T) {
	bin := buildBinary(t)
	d := startWith(t, bin, filepath.Join(t.TempDir(), "p.db"), false)
	// A service on every interface, which the host's own addresses reach.
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	targets := []string{
		fmt.Sprintf("http://[::127.0.0.1]:%d/", port),
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port),
		fmt.Sprintf("http://[64:ff9b::7f00:1]:%d/", port),
		fmt.Sprintf("http://[64:ff9b::a00:1]:%d/", port),
		fmt.Sprintf("http://[2002:c0a8:101::1]:%d/", port),
		fmt.Sprintf("http://[fec0::1]:%d/", port),
		fmt.Sprintf("http://localhost:%d/", port),
	}
	if own := ownAddress(); own != "" {
		targets = append(targets, "http://"+net.JoinHostPort(own, fmt.Sprint(port))+"/")
	} else {
		t.Log("no non-loopback interface address to try")
	}
	for _, target := range targets {
		for range 3 {
			status, _, body := d.raw(t, "GET", "/v1/fetch?url="+url.QueryEscape(target), "")
			if status != 403 || !strings.Contains(body, `"class":"policy"`) {
				t.Errorf("%s: %d %s, want 403 policy", target, status, body)
			}
		}
	}
	status, _, body := d.raw(t, "GET", "/v1/fetch?url="+url.QueryEscape(fmt.Sprintf("http://[fe80::1%%25lo]:%d/", port)), "")
	if status != 400 || !strings.Contains(body, `"field":"url"`) {
		t.Errorf("zone: %d %s, want 400 url", status, body)
	}
	var list struct {
		Endpoints []json.RawMessage `json:"endpoints"`
	}
	d.call(t, "GET", "/v1/guard", nil, 200, &list)
	if len(list.Endpoints) != 0 {
		t.Fatalf("refusals left guard records: %s", list.Endpoints)
	}
}

// ownAddress is a non-loopback address of this host, or "".
func ownAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	return ""
}

func TestHTTPHygiene(t *testing.T) {
	bin := buildBinary(t)
	d := start(t, bin, filepath.Join(t.TempDir(), "h.db"), "--max-conns", "3", "--body-timeout", "1s")
	apiHost := strings.TrimPrefix(d.api, "http://")

	t.Run("content-length with transfer-encoding", func(t *testing.T) {
		c := dialRaw(t, apiHost)
		hidden := "POST /v1/budget/pause HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"paused\":true}"
		body := "0\r\n\r\n" + hidden
		fmt.Fprintf(c, "POST /v1/items HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s", apiHost, len(body), body)
		all, _ := io.ReadAll(c) // the daemon must close
		resp := string(all)
		if !strings.HasPrefix(resp, "HTTP/1.1 400") || strings.Count(resp, "HTTP/1.1 ") != 1 {
			t.Fatalf("answer:\n%s", resp)
		}
		if d.paused(t) {
			t.Fatal("the smuggled request was served")
		}
	})

	t.Run("slow body", func(t *testing.T) {
		c := dialRaw(t, apiHost)
		fmt.Fprintf(c, "POST /v1/items HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", apiHost)
		start := time.Now()
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			io.Copy(io.Discard, c)
		}()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-closed:
				if el := time.Since(start); el > 4*time.Second {
					t.Fatalf("closed after %v", el)
				}
				return
			case <-tick.C:
				if i > 50 {
					t.Fatal("a trickled body kept the connection open for 10s")
				}
				c.Write([]byte(" "))
			}
		}
	})

	t.Run("connection cap", func(t *testing.T) {
		var held []net.Conn
		for range 3 {
			c := dialRaw(t, apiHost)
			// A finished request keeps the connection open, idle.
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", apiHost)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("held connection: %v %v", resp, err)
			}
			held = append(held, c)
		}
		c := dialRaw(t, apiHost)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", apiHost)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 503 || !strings.Contains(resp.Header.Get("Proxy-Status"), "connection_limit_reached") || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("over the cap: %d %v", resp.StatusCode, resp.Header)
		}
		held[0].Close()
		// Once one closes, a new connection is served again.
		deadline := time.Now().Add(5 * time.Second)
		for {
			c := dialRaw(t, apiHost)
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", apiHost)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil && resp.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no connection after one closed: %v %v", resp, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(15 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}
