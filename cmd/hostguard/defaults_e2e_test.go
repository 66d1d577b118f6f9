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
	// Counted before the host is back: the check may answer before the
	// client has even seen its second request give up.
	answered := host.answered.Load()
	host.answering.Store(true) // back, while the second request still hangs
	if err := <-second; err == nil {
		t.Fatal("the second request to the silent host was answered")
	}
	waitfor.True(t, 10*time.Second, "the check to close the endpoint", func() bool {
		e := d.endpoint(t, ep)
		return e.State == "closed" && e.TicketsOut == 0
	})
	if n := host.answered.Load() - answered; n != 1 {
		t.Errorf("%d requests reached the host after the trip; want the one check", n)
	}
	// It did trip: the check closed an open endpoint.
	b := d.metrics(t)
	for _, want := range []string{`hostguard_guard_transitions_total{from="closed",to="open"} 1`, `hostguard_guard_transitions_total{from="open",to="closed"} 1`} {
		if !strings.Contains(b, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if code, err := get(); code != 200 {
		t.Fatalf("the next request: %d %v; want it forwarded and answered", code, err)
	}
}

// comebackHost serves HTTP on one loopback port, answering each request
// after delay, and can stop listening (connections are refused) and start
// again on the same port. It logs "in" and "out" for every request it
// serves, in order.
type comebackHost struct {
	t     *testing.T
	addr  string
	delay atomic.Int64 // how long it takes to answer, in ns
	srv   *http.Server
	mu    sync.Mutex
	log   []string
}

func newComebackHost(t *testing.T, delay time.Duration) *comebackHost {
	h := &comebackHost{t: t}
	h.delay.Store(int64(delay))
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.note("in")
		time.Sleep(time.Duration(h.delay.Load()))
		h.note("out")
		w.WriteHeader(http.StatusOK)
	})}
	h.listen("127.0.0.1:0")
	t.Cleanup(func() { h.srv.Close() })
	return h
}

func (h *comebackHost) note(what string) {
	h.mu.Lock()
	h.log = append(h.log, what)
	h.mu.Unlock()
}

func (h *comebackHost) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	go h.srv.Serve(ln)
}

// down closes the listener and every connection; up listens again.
func (h *comebackHost) down() {
	h.srv.Close()
	h.srv = &http.Server{Handler: h.srv.Handler}
}

func (h *comebackHost) up() { h.listen(h.addr) }

// comebackToHalfOpen starts the daemon with its defaults but a 1 s open
// period (so a test does not wait 30 s), and a host seen answering in
// 300 ms that refuses two requests (the guard opens) and comes back
// answering in back. It returns once the open period is over, with the
// host's log cleared. get sends one request through the proxy, with a
// Hostguard-Timeout hint unless hint is empty, and says how long it took.
func comebackToHalfOpen(t *testing.T, back time.Duration) (d *daemonProc, host *comebackHost, get func(hint string) (int, time.Duration)) {
	t.Helper()
	bin := buildBinary(t)
	d = launch(t, bin, "serve", "--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0",
		"--db", filepath.Join(t.TempDir(), "d.db"), "--allow-private", "--log-format", "json", "--guard-open-for", "1s")
	host = newComebackHost(t, 300*time.Millisecond)
	ep := "http://" + host.addr
	client := proxyClient(d, 10*time.Second)
	t.Cleanup(client.Transport.(*http.Transport).CloseIdleConnections)
	get = func(hint string) (int, time.Duration) {
		req, _ := http.NewRequest(http.MethodGet, ep+"/live", nil)
		if hint != "" {
			req.Header.Set("Hostguard-Timeout", hint)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("GET: %v", err)
			return 0, 0
		}
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}
	if code, _ := get(""); code != 200 {
		t.Fatalf("the host answering: %d", code)
	}
	host.down()
	for i := 1; i <= 2; i++ {
		if code, _ := get(""); code != http.StatusBadGateway {
			t.Fatalf("request %d to the refusing host: %d; want 502", i, code)
		}
	}
	if e := d.endpoint(t, ep); e.State != "open" {
		t.Fatalf("after two refusals: %+v; want open", e)
	}
	host.delay.Store(int64(back))
	host.up()
	host.mu.Lock()
	host.log = nil
	host.mu.Unlock()
	waitfor.True(t, 10*time.Second, "the open period to end", func() bool { return d.endpoint(t, ep).State == "half-open" })
	return d, host, get
}

// TestDefaultDaemonLetsRequestsWaitForTheTrial: after the open period five
// requests arrive at once: one is the trial, and the other four wait for
// its answer (guard.trial_wait, 2 s by default) and then go out, instead
// of being refused while it was out. The host hears the trial alone first.
func TestDefaultDaemonLetsRequestsWaitForTheTrial(t *testing.T) {
	d, host, get := comebackToHalfOpen(t, 300*time.Millisecond)
	const n = 5
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { code, _ := get(""); codes <- code })
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != 200 {
			t.Errorf("a request after the open period: %d; want 200, every request waiting for the trial's answer", code)
		}
	}
	host.mu.Lock()
	if len(host.log) != 2*n || host.log[0] != "in" || host.log[1] != "out" {
		t.Errorf("the host heard %v; want the trial alone, then the other %d", host.log, n-1)
	}
	host.mu.Unlock()
	b := d.metrics(t)
	for _, want := range []string{`hostguard_guard_trial_waits_total{outcome="admitted"} 4`, `hostguard_guard_trial_waits_total{outcome="refused"} 0`} {
		if !strings.Contains(b, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestDefaultDaemonRefusesInTimeAClientThatChoseItsTimeout: the host
// comes back answering in 2 s, so the trial is out that long, and a
// request waiting for it carries Hostguard-Timeout: 1. The host needed
// 300 ms before, so the daemon would wait 1.5 s for the trial;
// the request instead hears its 503 while what is left of its second
// still covers those 300 ms, before the client's chosen timeout.
func TestDefaultDaemonRefusesInTimeAClientThatChoseItsTimeout(t *testing.T) {
	d, host, get := comebackToHalfOpen(t, 2*time.Second)
	ep := "http://" + host.addr
	trial := make(chan int, 1)
	go func() { code, _ := get(""); trial <- code }()
	waitfor.True(t, 10*time.Second, "the trial to be out", func() bool { return d.endpoint(t, ep).TrialOut })
	code, took := get("1")
	if code != http.StatusServiceUnavailable || took >= time.Second {
		t.Errorf("a request with Hostguard-Timeout: 1 behind a hanging trial: %d after %v; want 503 within 1s", code, took)
	}
	b := d.metrics(t)
	if want := `hostguard_guard_trial_waits_total{outcome="refused"} 1`; !strings.Contains(b, want) {
		t.Errorf("metrics lack %s: the request did not wait", want)
	}
	if code := <-trial; code != 200 {
		t.Errorf("the trial: %d; want 200", code)
	}
}

// metrics returns d's /metrics page.
func (d *daemonProc) metrics(t *testing.T) string {
	t.Helper()
	resp, err := plainClient.Get(d.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
