package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
)

// blackHole accepts connections and reads them, answering nothing: a host
// that is up at the TCP level and never answers.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// heardHole is a blackHole that also tells, on the returned channel, each
// time a request's header block has arrived: the moment from which the
// daemon counts the upstream's wait (it had sent the request by then).
func heardHole(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan struct{}, 16)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						heard <- struct{}{}
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), heard
}

// giveUpAfterHeard sends GET url through the proxy and gives up once the
// hole has heard the request and wait has passed since: a give-up that
// lasted at least wait by the daemon's count, however slow the machine.
func giveUpAfterHeard(t *testing.T, d *daemonProc, url string, heard <-chan struct{}, wait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	done := make(chan error, 1)
	go func() {
		resp, err := proxyClient(d, 0).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-heard:
	case err := <-done:
		t.Fatalf("the request ended before the upstream heard it: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream never heard the request")
	}
	if wait > 0 {
		// Real time is the thing measured: the daemon is another process.
		<-time.After(wait)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the give-up got an answer")
	}
}

func proxyClient(d *daemonProc, timeout time.Duration) *http.Client {
	pu, _ := url.Parse("http://" + d.proxy)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}, Timeout: timeout}
}

type guardEP struct {
	Endpoint   string `json:"endpoint"`
	State      string `json:"state"`
	Failures   int    `json:"failures"`
	TicketsOut int    `json:"tickets_out"`
	TrialOut   bool   `json:"trial_out"`
}

func (d *daemonProc) endpoint(t *testing.T, ep string) guardEP {
	t.Helper()
	var out struct {
		Endpoints []guardEP `json:"endpoints"`
	}
	d.call(t, "GET", "/v1/guard", nil, 200, &out)
	for _, e := range out.Endpoints {
		if e.Endpoint == ep {
			return e
		}
	}
	return guardEP{Endpoint: ep, State: "closed"}
}

// rawProxy sends req as written to the proxy and reads one answer.
func rawProxy(t *testing.T, d *daemonProc, req string) (*http.Response, string) {
	t.Helper()
	c := dialRaw(t, d.proxy)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the proxy's answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestProxyGiveUps(t *testing.T) {
	bin := buildBinary(t)
	t.Run("two give-ups trip the endpoint", func(t *testing.T) {
		d := start(t, bin, filepath.Join(t.TempDir(), "g.db"), "--header-timeout", "30s", "--guard-wait-floor", "300ms", "--guard-max-probes", "-1")
		hole, heard := heardHole(t)
		ep := "http://" + hole
		for range 2 {
			giveUpAfterHeard(t, d, ep+"/x", heard, 400*time.Millisecond)
			waitfor.True(t, 5*time.Second, "the give-up to settle", func() bool { return d.endpoint(t, ep).TicketsOut == 0 })
		}
		if st := d.endpoint(t, ep).State; st != "open" {
			t.Fatalf("after two give-ups the endpoint is %s", st)
		}
		began := time.Now()
		resp, err := proxyClient(d, 5*time.Second).Get(ep + "/x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		if el := time.Since(began); el > 300*time.Millisecond {
			t.Fatalf("the fast-fail took %v", el)
		}
		if resp.StatusCode != 503 || !strings.HasPrefix(resp.Header.Get("Proxy-Status"), "hostguard; error=destination_unavailable") ||
			body["fast_fail"] != true || body["endpoint"] != ep || body["retry_after_seconds"] == nil {
			t.Fatalf("third request: %d %v %v", resp.StatusCode, resp.Header, body)
		}
		msg, _ := body["error"].(string)
		for _, bad := range []string{"timed out", "timeout", "HTTP Error", "authoriz", "unauthorized"} {
			if strings.Contains(strings.ToLower(msg), strings.ToLower(bad)) {
				t.Fatalf("fast-fail message %q contains %q", msg, bad)
			}
		}
	})
	t.Run("shorter give-ups never trip", func(t *testing.T) {
		d := start(t, bin, filepath.Join(t.TempDir(), "s.db"), "--header-timeout", "30s", "--guard-wait-floor", "5s")
		hole, heard := heardHole(t)
		ep := "http://" + hole
		for range 3 {
			// At once: far inside the 5 s give-up time.
			giveUpAfterHeard(t, d, ep+"/x", heard, 0)
			waitfor.True(t, 5*time.Second, "the give-up to settle", func() bool { return d.endpoint(t, ep).TicketsOut == 0 })
		}
		if e := d.endpoint(t, ep); e.State != "closed" || e.Failures != 0 {
			t.Fatalf("short give-ups counted: %+v", e)
		}
	})
}

func TestProxyContract(t *testing.T) {
	bin := buildBinary(t)
	var hits atomic.Int64
	var mu sync.Mutex
	var seen http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/busy":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(503)
			io.WriteString(w, "upstream's own")
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
		case "/upload":
			n, _ := io.Copy(io.Discard, r.Body)
			fmt.Fprintf(w, "%d", n)
		default:
			mu.Lock()
			seen = r.Header.Clone()
			mu.Unlock()
		}
	}))
	defer up.Close()
	hostport := strings.TrimPrefix(up.URL, "http://")
	d := start(t, bin, filepath.Join(t.TempDir(), "c.db"), "--header-timeout", "1s", "--idle-timeout", "1s", "--guard-max-probes", "-1")

	t.Run("an upstream's own 503 passes unmarked", func(t *testing.T) {
		resp, body := rawProxy(t, d, "GET "+up.URL+"/busy HTTP/1.1\r\nHost: "+hostport+"\r\nConnection: close\r\n\r\n")
		if resp.StatusCode != 503 || resp.Header.Get("Proxy-Status") != "" || body != "upstream's own" {
			t.Fatalf("%d %v %q", resp.StatusCode, resp.Header, body)
		}
	})
	t.Run("forwarded as the client sent it, hints stripped", func(t *testing.T) {
		resp, _ := rawProxy(t, d, "GET "+up.URL+"/echo HTTP/1.1\r\nHost: "+hostport+"\r\nHostguard-Timeout: 2.5\r\nHostguard-Exempt: 1\r\nX-Mine: a\r\nConnection: close\r\n\r\n")
		if resp.StatusCode != 200 {
			t.Fatalf("%d", resp.StatusCode)
		}
		mu.Lock()
		defer mu.Unlock()
		if seen.Get("Hostguard-Timeout") != "" || seen.Get("Hostguard-Exempt") != "" || seen.Get("X-Mine") != "a" ||
			seen.Get("Via") != "1.1 hostguard" || seen.Get("Accept-Encoding") != "" || seen.Get("User-Agent") != "" {
			t.Fatalf("upstream saw %v", seen)
		}
	})
	t.Run("the timeout hint applies", func(t *testing.T) {
		began := time.Now()
		resp, _ := rawProxy(t, d, "GET "+up.URL+"/slow HTTP/1.1\r\nHost: "+hostport+"\r\nHostguard-Timeout: 0.2\r\nHostguard-Exempt: true\r\nConnection: close\r\n\r\n")
		if el := time.Since(began); resp.StatusCode != 504 || el > 900*time.Millisecond ||
			!strings.HasPrefix(resp.Header.Get("Proxy-Status"), "hostguard; error=http_response_timeout") {
			t.Fatalf("%d after %v: %v", resp.StatusCode, el, resp.Header)
		}
	})
	t.Run("a malformed hint is a 400 naming it and changes nothing", func(t *testing.T) {
		before := hits.Load()
		for _, h := range []string{"Hostguard-Timeout: 0", "Hostguard-Timeout: 601", "Hostguard-Timeout: 1e2", "Hostguard-Exempt: maybe"} {
			resp, body := rawProxy(t, d, "GET "+up.URL+"/echo HTTP/1.1\r\nHost: "+hostport+"\r\n"+h+"\r\nConnection: close\r\n\r\n")
			name, _, _ := strings.Cut(h, ":")
			if resp.StatusCode != 400 || !strings.Contains(body, `"field":"`+name+`"`) ||
				!strings.HasPrefix(resp.Header.Get("Proxy-Status"), "hostguard; error=http_request_error") {
				t.Fatalf("%s: %d %v %s", h, resp.StatusCode, resp.Header, body)
			}
		}
		if hits.Load() != before {
			t.Fatal("a bad hint reached the upstream")
		}
	})
	t.Run("exempt requests never trip", func(t *testing.T) {
		hole := "http://" + blackHole(t)
		for i := range 4 {
			resp, _ := rawProxy(t, d, "GET "+hole+"/ HTTP/1.1\r\nHost: x\r\nHostguard-Exempt: 1\r\nHostguard-Timeout: 0.1\r\nConnection: close\r\n\r\n")
			if resp.StatusCode != 504 {
				t.Fatalf("exempt request %d: %d", i, resp.StatusCode)
			}
		}
		if st := d.endpoint(t, hole).State; st != "closed" {
			t.Fatalf("exempt failures opened the endpoint: %s", st)
		}
	})
	t.Run("a slow upload is not charged", func(t *testing.T) {
		c := dialRaw(t, d.proxy)
		c.SetDeadline(time.Now().Add(15 * time.Second))
		const chunks = 10
		fmt.Fprintf(c, "POST %s/upload HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", up.URL, hostport, chunks*3)
		for range chunks { // 3 s in all under a 1 s header timeout
			time.Sleep(300 * time.Millisecond)
			io.WriteString(c, "abc")
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "30" {
			t.Fatalf("slow upload: %d %q", resp.StatusCode, b)
		}
		if e := d.endpoint(t, "http://"+hostport); e.State != "closed" || e.Failures != 0 {
			t.Fatalf("the upload was charged: %+v", e)
		}
	})
	t.Run("an Upgrade is refused clearly", func(t *testing.T) {
		resp, body := rawProxy(t, d, "GET "+up.URL+"/ws HTTP/1.1\r\nHost: "+hostport+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		if resp.StatusCode != 501 || resp.Header.Get("Proxy-Status") == "" || !strings.Contains(body, "Upgrade") {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
		}
	})
}

func TestConnectContract(t *testing.T) {
	bin := buildBinary(t)
	d := start(t, bin, filepath.Join(t.TempDir(), "t.db"), "--header-timeout", "500ms", "--guard-open-for", "1s", "--guard-max-probes", "-1")
	hole := blackHole(t)
	ep := "https://" + hole
	trip := func() {
		for range 2 {
			var a struct {
				Ticket string `json:"ticket"`
			}
			d.call(t, "POST", "/v1/guard/acquire", map[string]any{"url": ep}, 200, &a)
			d.call(t, "POST", "/v1/guard/report", map[string]any{"ticket": a.Ticket, "outcome": "failed"}, 200, nil)
		}
	}
	t.Run("a tripped endpoint answers 503 with Proxy-Status", func(t *testing.T) {
		trip()
		c := dialRaw(t, d.proxy)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hole, hole)
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		if !strings.HasPrefix(line, "HTTP/1.1 503 endpoint "+ep+" is not answering") {
			t.Fatalf("status line %q", line)
		}
		resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader("HTTP/1.1 503 x\r\n"), br)), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if !strings.HasPrefix(resp.Header.Get("Proxy-Status"), "hostguard; error=destination_unavailable") || !strings.Contains(string(b), `"fast_fail":true`) {
			t.Fatalf("%v %s", resp.Header, b)
		}
	})
	t.Run("a silent tunnel releases its trial", func(t *testing.T) {
		waitfor.True(t, 5*time.Second, "the open period to end", func() bool { return d.endpoint(t, ep).State == "half-open" })
		c := dialRaw(t, d.proxy)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hole, hole)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("trial tunnel: %v %v", resp, err)
		}
		if !d.endpoint(t, ep).TrialOut {
			t.Fatal("the tunnel does not hold the trial")
		}
		// The client says nothing; after the header timeout the trial is
		// free again while the tunnel stays open.
		waitfor.True(t, 5*time.Second, "the silent tunnel to release its trial", func() bool { return !d.endpoint(t, ep).TrialOut })
		if e := d.endpoint(t, ep); e.TicketsOut != 0 {
			t.Fatalf("after release: %+v", e)
		}
	})
}

func TestExtendedTrialIsNotFreed(t *testing.T) {
	bin := buildBinary(t)
	d := start(t, bin, filepath.Join(t.TempDir(), "x.db"), "--ticket-lease", "1s", "--guard-open-for", "1s", "--guard-max-probes", "-1")
	const ep = "http://trial.example"
	for range 2 {
		var a struct {
			Ticket string `json:"ticket"`
		}
		d.call(t, "POST", "/v1/guard/acquire", map[string]any{"url": ep}, 200, &a)
		d.call(t, "POST", "/v1/guard/report", map[string]any{"ticket": a.Ticket, "outcome": "failed"}, 200, nil)
	}
	waitfor.True(t, 5*time.Second, "the open period to end", func() bool { return d.endpoint(t, ep).State == "half-open" })
	var trial struct {
		Ticket string `json:"ticket"`
		Trial  bool   `json:"trial"`
		Extend string `json:"extend"`
	}
	d.call(t, "POST", "/v1/guard/acquire", map[string]any{"url": ep}, 200, &trial)
	if !trial.Trial {
		t.Fatal("no trial ticket")
	}
	// Three lease lengths, extended every half lease.
	for range 6 {
		time.Sleep(500 * time.Millisecond)
		d.call(t, "POST", trial.Extend, nil, 200, nil)
	}
	if !d.endpoint(t, ep).TrialOut {
		t.Fatal("the extended trial was freed")
	}
	d.call(t, "POST", "/v1/guard/acquire", map[string]any{"url": ep}, 503, nil)
	d.call(t, "POST", "/v1/guard/report", map[string]any{"ticket": trial.Ticket, "outcome": "answered"}, 200, nil)
}

func TestSignals(t *testing.T) {
	bin := buildBinary(t)
	t.Run("SIGHUP reloads the file and keeps state", func(t *testing.T) {
		dir := t.TempDir()
		config := filepath.Join(dir, "hostguard.json")
		write := func(body string) {
			if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write(`{"budget": {"validation": 50, "sources": [{"name": "films", "owner_daily_limit": 1000}]}}`)
		d := start(t, bin, filepath.Join(dir, "r.db"), "--config", config)
		// Some state: an open endpoint.
		for range 2 {
			var a struct {
				Ticket string `json:"ticket"`
			}
			d.call(t, "POST", "/v1/guard/acquire", map[string]any{"url": "http://kept.example"}, 200, &a)
			d.call(t, "POST", "/v1/guard/report", map[string]any{"ticket": a.Ticket, "outcome": "failed"}, 200, nil)
		}
		write(`{"log_level": "debug", "ticket_lease": "7s",
			"budget": {"validation": 70, "sources": [{"name": "films", "owner_daily_limit": 1000}, {"name": "tv", "owner_daily_limit": 200}]}}`)
		d.cmd.Process.Signal(syscall.SIGHUP)
		waitfor.True(t, 10*time.Second, "the reload line", func() bool {
			return strings.Contains(d.logs.String(), "configuration reloaded")
		})
		if !strings.Contains(d.logs.String(), "need a restart") || !strings.Contains(d.logs.String(), "ticket_lease") {
			t.Fatalf("the unreloadable setting was not named:\n%s", d.logs.String())
		}
		var rep struct {
			Kinds []struct {
				Kind      string `json:"kind"`
				Allowance int64  `json:"allowance"`
			} `json:"kinds"`
			Sources []struct {
				Name string `json:"name"`
			} `json:"sources"`
		}
		d.call(t, "GET", "/v1/budget", nil, 200, &rep)
		names := fmt.Sprint(rep.Sources)
		if kinds := fmt.Sprint(rep.Kinds); !strings.Contains(kinds, "{validation 70}") || !strings.Contains(names, "tv") {
			t.Fatalf("after the reload: kinds %s, sources %s", kinds, names)
		}
		if d.endpoint(t, "http://kept.example").State != "open" {
			t.Fatal("the reload dropped the guard's state")
		}
		// Still serving: SIGHUP did not stop it.
		d.call(t, "GET", "/healthz", nil, 200, nil)
	})
	t.Run("SIGHUP refuses a file others may write, and says why", func(t *testing.T) {
		dir := t.TempDir()
		config := filepath.Join(dir, "hostguard.json")
		if err := os.WriteFile(config, []byte(`{"budget": {"validation": 50}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		d := start(t, bin, filepath.Join(dir, "w.db"), "--config", config)
		if err := os.WriteFile(config, []byte(`{"budget": {"validation": 70}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(config, 0o666); err != nil {
			t.Fatal(err)
		}
		d.cmd.Process.Signal(syscall.SIGHUP)
		waitfor.True(t, 10*time.Second, "the refusal", func() bool {
			return strings.Contains(d.logs.String(), "reload refused")
		})
		logs := d.logs.String()
		if !strings.Contains(logs, "chmod go-w") || strings.Contains(logs, "does not parse") {
			t.Fatalf("the refusal does not say the file is writable by others, or says it does not parse:\n%s", logs)
		}
		var rep struct {
			Kinds []struct {
				Kind      string `json:"kind"`
				Allowance int64  `json:"allowance"`
			} `json:"kinds"`
		}
		d.call(t, "GET", "/v1/budget", nil, 200, &rep)
		if kinds := fmt.Sprint(rep.Kinds); !strings.Contains(kinds, "{validation 50}") {
			t.Fatalf("the refused file was applied: kinds %s", kinds)
		}
	})
	t.Run("SIGHUP applies feed changes and keeps their stored state", func(t *testing.T) {
		dir := t.TempDir()
		config := filepath.Join(dir, "hostguard.json")
		write := func(feeds string) {
			body := `{"budget": {"sources": [{"name": "films", "owner_daily_limit": 1000, "pace": "0s"},
				{"name": "tv", "owner_daily_limit": 1000, "pace": "0s"}]}, "feeds": [` + feeds + `]}`
			if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		films, _ := newIndexer(t)
		tv, _ := newIndexer(t)
		filmsFeed := `{"name": "films", "url": "` + films.URL() + `", "api_key_env": "E2E_INDEXER_KEY"}`
		tvFeed := `{"name": "tv", "url": "` + tv.URL() + `", "api_key_env": "E2E_INDEXER_KEY"}`
		write("")
		d := start(t, bin, filepath.Join(dir, "f.db"), "--config", config)
		type feedState struct {
			Name       string     `json:"name"`
			Configured bool       `json:"configured"`
			SyncedAt   *time.Time `json:"synced_at"`
			ItemsTotal int64      `json:"items_total"`
		}
		feeds := func() map[string]feedState {
			var resp struct {
				Feeds []feedState `json:"feeds"`
			}
			d.call(t, "GET", "/v1/feeds", nil, 200, &resp)
			out := map[string]feedState{}
			for _, f := range resp.Feeds {
				out[f.Name] = f
			}
			return out
		}
		reloads := 0
		hup := func() {
			reloads++
			d.cmd.Process.Signal(syscall.SIGHUP)
			waitfor.True(t, 10*time.Second, "the reload line", func() bool {
				return strings.Count(d.logs.String(), "configuration reloaded") == reloads
			})
		}

		// Added: polled, and its items stored.
		write(filmsFeed)
		hup()
		waitfor.True(t, 15*time.Second, "the added feed to sync", func() bool {
			f := feeds()["films"]
			return f.Configured && f.SyncedAt != nil && f.ItemsTotal == 4
		})
		if strings.Contains(d.logs.String(), "need a restart") {
			t.Fatalf("a feed change was logged as needing a restart:\n%s", d.logs.String())
		}

		// Removed: no longer configured, its stored position kept. Another
		// feed added in the same reload is polled, which shows the loops
		// ran on while the removed one stayed quiet.
		write(tvFeed)
		hup()
		polled := films.Count("search")
		waitfor.True(t, 15*time.Second, "the other feed to sync", func() bool { return feeds()["tv"].SyncedAt != nil })
		f := feeds()["films"]
		if f.Configured || f.SyncedAt == nil || f.ItemsTotal != 4 {
			t.Fatalf("the removed feed: %+v", f)
		}
		if n := films.Count("search"); n != polled {
			t.Fatalf("the removed feed was polled %d more times", n-polled)
		}

		// Back again: configured, with its stored head and count; its
		// next poll waits for the interval from its stored last sync, so
		// coming back is no extra poll of the indexer.
		write(filmsFeed + "," + tvFeed)
		hup()
		f = feeds()["films"]
		if !f.Configured || f.SyncedAt == nil || f.ItemsTotal != 4 {
			t.Fatalf("the feed back again: %+v", f)
		}
	})
	t.Run("a second signal during the drain exits at once", func(t *testing.T) {
		d := start(t, bin, filepath.Join(t.TempDir(), "q.db"), "--shutdown-timeout", "30s", "--header-timeout", "30s")
		hole := blackHole(t)
		// An in-flight request keeps the drain going.
		go proxyClient(d, 20*time.Second).Get("http://" + hole + "/")
		waitfor.True(t, 5*time.Second, "the request to be in flight", func() bool { return d.endpoint(t, "http://"+hole).TicketsOut == 1 })
		d.cmd.Process.Signal(syscall.SIGTERM)
		waitfor.True(t, 5*time.Second, "the drain to start", func() bool { return strings.Contains(d.logs.String(), "shutting down") })
		began := time.Now()
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			t.Fatal("a second SIGTERM did not end the drain")
		}
		if el := time.Since(began); el > 3*time.Second {
			t.Fatalf("exited %v after the second signal", el)
		}
	})
}
