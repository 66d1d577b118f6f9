package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/store/storetest"
)

// silentHost is a loopback host that accepts connections and, while
// silent, never answers them; while answering, it answers every request
// 200. It counts what it accepted and what it answered.
type silentHost struct {
	ln        net.Listener
	answering atomic.Bool
	accepts   atomic.Int64
	answered  atomic.Int64
	accepted  chan struct{} // a token per accepted connection, if there is room

	mu    sync.Mutex
	conns []net.Conn
}

func newSilentHost(t *testing.T) *silentHost {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &silentHost{ln: ln, accepted: make(chan struct{}, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.accepts.Add(1)
			select {
			case h.accepted <- struct{}{}:
			default:
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			if h.answering.Load() {
				go h.answer(c)
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			c.Close()
		}
	})
	return h
}

func (h *silentHost) answer(c net.Conn) {
	defer c.Close()
	if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
		return
	}
	h.answered.Add(1)
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
}

func (h *silentHost) url() string { return "http://" + h.ln.Addr().String() }

// viaProxy sends GET rawURL through d's proxy on a connection of its own
// and returns the status, 0 when no answer came.
func viaProxy(t *testing.T, d *daemonProc, rawURL string) int {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: d.proxy}), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(rawURL)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// guardState returns the state d's guard holds for endpoint.
func guardState(t *testing.T, d *daemonProc, endpoint string) string {
	t.Helper()
	var out struct {
		Endpoints []struct{ Endpoint, State string } `json:"endpoints"`
	}
	status, body := d.send(t, "GET", "/v1/guard", "")
	if status != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("GET /v1/guard: %d %s", status, body)
	}
	for _, e := range out.Endpoints {
		if e.Endpoint == endpoint {
			return e.State
		}
	}
	return "closed"
}

// TestSharedGuard runs three daemons on one PostgreSQL schema: a host that
// two timeouts through A's proxy trip is refused by B and C without being
// contacted; when it answers again, one probe reaches it and all three
// close; and when the node probing for the cluster dies mid-probe, another
// takes over once its lease expires.
func TestSharedGuard(t *testing.T) {
	bin := buildBinary(t)
	dsn := storetest.PostgresDSN(t)
	args := []string{"--guard-open-for", "3s", "--guard-max-open-for", "-1s"}
	a, b, c := start(t, bin, dsn, args...), start(t, bin, dsn, args...), start(t, bin, dsn, args...)
	all := []*daemonProc{a, b, c}

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	host := newSilentHost(t)
	key := host.url()

	// Every node's own network works: another endpoint answers.
	for _, d := range all {
		if s := viaProxy(t, d, up.URL); s != 200 {
			t.Fatalf("the answering host through a proxy: %d", s)
		}
	}
	for range 2 {
		if s := viaProxy(t, a, key+"/"); s == 200 || s == 0 {
			t.Fatalf("the silent host through A: %d, want the proxy's timeout", s)
		}
	}
	if guardState(t, a, key) != "open" {
		t.Fatal("two timeouts did not open the endpoint on A")
	}
	seen := host.accepts.Load()
	waitfor.True(t, time.Second, "B and C adopt A's opening within a second", func() bool {
		return guardState(t, b, key) == "open" && guardState(t, c, key) == "open"
	})
	for _, d := range []*daemonProc{b, c, a} {
		if s := viaProxy(t, d, key+"/"); s != 503 {
			t.Fatalf("the open host through a proxy: %d, want 503", s)
		}
	}
	if n := host.accepts.Load(); n != seen {
		t.Fatalf("the open host was contacted %d times", n-seen)
	}

	// Back: one probe for the cluster closes every node.
	host.answering.Store(true)
	waitfor.True(t, 15*time.Second, "all three close once the host answers", func() bool {
		for _, d := range all {
			if guardState(t, d, key) != "closed" {
				return false
			}
		}
		return true
	})
	if n := host.answered.Load(); n != 1 {
		t.Fatalf("%d probes reached the host in one open period, want 1", n)
	}
	if n := host.accepts.Load() - seen; n != 1 {
		t.Fatalf("%d connections reached the host in one open period, want 1", n)
	}

	// Down again, and only A asks for it: A probes for the cluster and
	// dies mid-probe.
	host.answering.Store(false)
	if s := viaProxy(t, a, up.URL); s != 200 {
		t.Fatalf("the answering host through A: %d", s)
	}
	for range 2 {
		viaProxy(t, a, key+"/")
	}
	waitfor.True(t, time.Second, "B and C adopt A's second opening", func() bool {
		return guardState(t, b, key) == "open" && guardState(t, c, key) == "open"
	})
	if s := viaProxy(t, a, key+"/"); s != 503 {
		t.Fatalf("the open host through A: %d, want 503", s)
	}
	for len(host.accepted) > 0 {
		<-host.accepted
	}
	select {
	case <-host.accepted:
	case <-time.After(15 * time.Second):
		t.Fatal("A's probe never reached the host")
	}
	a.cmd.Process.Kill()
	<-a.done
	host.answering.Store(true)
	answered := host.answered.Load()
	if s := viaProxy(t, b, key+"/"); s != 503 {
		t.Fatalf("the host through B while A's lease runs: %d, want 503", s)
	}
	waitfor.True(t, 20*time.Second, "B and C close after another node's probe", func() bool {
		return guardState(t, b, key) == "closed" && guardState(t, c, key) == "closed"
	})
	if n := host.answered.Load() - answered; n != 1 {
		t.Fatalf("%d probes reached the host after A died, want 1", n)
	}
}
