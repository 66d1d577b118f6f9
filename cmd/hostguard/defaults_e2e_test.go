package main

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
)

// mutedHost accepts connections on loopback, reads whatever comes and
// never answers; it counts what it accepted.
type mutedHost struct {
	ln       net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

func newMutedHost(t *testing.T) *mutedHost {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &mutedHost{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.accepted.Add(1)
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			c.Close()
		}
	})
	return h
}

// TestDefaultDaemonTripsForShortTimeouts is the new user's case: the
// daemon with its defaults (only its ports, its database and
// --allow-private for a loopback upstream), a host that never answers,
// and a client with a 2 s timeout through the proxy. Its second give-up
// opens the endpoint, and the next request fails fast without the host
// hearing of it, over http:// and over CONNECT to a TLS host.
func TestDefaultDaemonTripsForShortTimeouts(t *testing.T) {
	bin := buildBinary(t)
	d := launch(t, bin, "serve", "--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0",
		"--db", filepath.Join(t.TempDir(), "d.db"), "--allow-private", "--log-format", "json")
	pu, _ := url.Parse("http://" + d.proxy)
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			host := newMutedHost(t)
			ep := scheme + "://" + host.ln.Addr().String()
			// Go's transport finishes a dial (the CONNECT and the TLS
			// handshake) in the background after the request's timeout,
			// to reuse the connection; its own handshake timeout is what
			// closes it, so it gets the client's 2 s too.
			tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSHandshakeTimeout: 2 * time.Second,
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 2 * time.Second}
			for i := 1; i <= 2; i++ {
				resp, err := client.Get(ep + "/live")
				if err == nil {
					resp.Body.Close()
					t.Fatalf("request %d: %d from a host that never answers", i, resp.StatusCode)
				}
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("request %d: %v; want the client's timeout", i, err)
				}
				waitfor.True(t, 10*time.Second, "the give-up to settle its ticket", func() bool { return d.endpoint(t, ep).TicketsOut == 0 })
			}
			if e := d.endpoint(t, ep); e.State != "open" || e.Failures != 2 {
				t.Fatalf("after two 2 s give-ups: %+v; want open with 2 failures", e)
			}
			began := time.Now()
			resp, err := client.Get(ep + "/live")
			el := time.Since(began)
			switch scheme {
			case "http":
				if err != nil {
					t.Fatalf("third request: %v; want the proxy's fast-fail", err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable ||
					!strings.HasPrefix(resp.Header.Get("Proxy-Status"), "hostguard; error=destination_unavailable") {
					t.Fatalf("third request: %d %v; want the fast-fail", resp.StatusCode, resp.Header)
				}
			case "https":
				// Go's transport reports a refused CONNECT by its reason phrase.
				if err == nil || !strings.Contains(err.Error(), "not answering; not contacted (fast-fail)") {
					t.Fatalf("third request: %v; want the refused CONNECT", err)
				}
			}
			if el > time.Second {
				t.Errorf("the fast-fail took %v", el)
			}
			if n := host.accepted.Load(); n != 2 {
				t.Fatalf("the host accepted %d connections; want 2, none for the fast-fail", n)
			}
		})
	}
}

// TestDefaultDaemonChecksAHostThatCameBack: the daemon with its defaults,
// a client with a 2 s timeout, and a host seen answering that goes silent
// for two requests and is back while the second still hangs. The second
// give-up opens the endpoint, and the guard checks it at once: the host
// answers the check, the endpoint closes, and the next request is
// forwarded instead of refused for the 30 s open period.
func TestDefaultDaemonChecksAHostThatCameBack(t *testing.T) {
	bin := buildBinary(t)
	d := launch(t, bin, "serve", "--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0",
		"--db", filepath.Join(t.TempDir(), "d.db"), "--allow-private", "--log-format", "json")
	host := newSilentHost(t)
	ep := host.url()
	client := proxyClient(d, 2*time.Second)
	defer client.Transport.(*http.Transport).CloseIdleConnections()
	get := func() (int, error) {
		resp, err := client.Get(ep + "/live")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	host.answering.Store(true)
	if code, err := get(); code != 200 {
		t.Fatalf("the host answering: %d %v", code, err)
	}
	host.answering.Store(false)
	if _, err := get(); err == nil {
		t.Fatal("the first request to the silent host was answered")
	}
	waitfor.True(t, 10*time.Second, "the give-up to settle its ticket", func() bool { return d.endpoint(t, ep).TicketsOut == 0 })
	before := host.accepts.Load()
	second := make(chan error, 1)
	go func() {
		_, err := get()
		second <- err
	}()
	waitfor.True(t, 5*time.Second, "the second request to reach the host", func() bool { return host.accepts.Load() > before })
	host.answering.Store(true) // back, while the second request still hangs
	if err := <-second; err == nil {
		t.Fatal("the second request to the silent host was answered")
	}
	answered := host.answered.Load()
	waitfor.True(t, 10*time.Second, "the check to close the endpoint", func() bool {
		e := d.endpoint(t, ep)
		return e.State == "closed" && e.TicketsOut == 0
	})
	if n := host.answered.Load() - answered; n != 1 {
		t.Errorf("%d requests reached the host after the trip; want the one check", n)
	}
	// It did trip: the check closed an open endpoint.
	resp, err := plainClient.Get(d.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`hostguard_guard_transitions_total{from="closed",to="open"} 1`, `hostguard_guard_transitions_total{from="open",to="closed"} 1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if code, err := get(); code != 200 {
		t.Fatalf("the next request: %d %v; want it forwarded and answered", code, err)
	}
}
