package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/logtest"
	"github.com/hostguard/hostguard/internal/waitfor"
)

// daemonProc is one running hostguard binary.
type daemonProc struct {
	cmd   *exec.Cmd
	api   string // http://host:port
	proxy string // host:port
	logs  *logtest.Buffer
	done  chan struct{}
}

// buildBinary builds the real binary once for the test.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hostguard")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// start runs the binary on free loopback ports (port 0; the addresses are
// read from its JSON "listening" log line) over the database db.
func start(t *testing.T, bin, db string, args ...string) *daemonProc {
	t.Helper()
	return startWith(t, bin, db, true, args...)
}

// startWith is start with the destination policy on (allowPrivate false)
// or off.
func startWith(t *testing.T, bin, db string, allowPrivate bool, args ...string) *daemonProc {
	t.Helper()
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0",
		"--db", db, "--log-format", "json", "--allow-private=" + fmt.Sprint(allowPrivate), "--budget-source", "idx:100", "--header-timeout", "500ms", "--idle-timeout", "500ms"}, args...)
	return launch(t, bin, args...)
}

// launch runs the binary with exactly args, which must make it log its
// addresses as JSON, and returns once it listens.
func launch(t *testing.T, bin string, args ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOSTGUARD_TOKEN=", "HOSTGUARD_DISABLE_GUARD=", "HOSTGUARD_CONFIG=", "E2E_INDEXER_KEY="+e2eKey)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{cmd: cmd, logs: &logtest.Buffer{}, done: make(chan struct{})}
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	found := make(chan map[string]any, 1)
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			d.logs.Write(append(sc.Bytes(), '\n'))
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "hostguard: listening" {
				found <- line
			}
		}
		d.cmd.Wait()
	}()
	select {
	case line := <-found:
		d.api = "http://" + line["api"].(string)
		d.proxy = line["proxy"].(string)
	case <-d.done:
		t.Fatalf("the daemon exited before listening:\n%s", d.logs.String())
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not report its addresses")
	}
	return d
}

// call sends a JSON request and decodes a JSON answer; it fails the test
// unless the status is want.
func (d *daemonProc) call(t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, d.api+path, r)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

type leaseOut struct {
	ID    string `json:"id"`
	Lease string `json:"lease"`
}

func TestEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "e2e.db")
	idx, rels := newIndexer(t)
	// The configuration file: a feed whose key comes from the environment,
	// its budget source, an allowance, the evidence policy. The flags'
	// --budget-source idx:100 joins the file's sources.
	config := filepath.Join(dir, "hostguard.json")
	if err := os.WriteFile(config, []byte(`{
		"log_level": "debug",
		"leader": {"lease": "2s"},
		"budget": {"validation": 50, "sources": [{"name": "films", "owner_daily_limit": 1000, "pace": "0s"}]},
		"feeds": [{"name": "films", "url": "`+idx.URL()+`", "api_key_env": "E2E_INDEXER_KEY", "keep_items": 3}],
		"evidence": {"fingerprint": "e2e-policy"}
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := start(t, bin, db, "--config", config)

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s", r.URL.RequestURI())
	}))
	defer upstream.Close()

	// Probes, metrics, status page.
	d.call(t, "GET", "/healthz", nil, 200, nil)
	for _, p := range []string{"/metrics", "/", "/v1/status"} {
		d.call(t, "GET", p, nil, 200, nil)
	}

	// Guard.
	var acq struct {
		Ticket string `json:"ticket"`
	}
	d.call(t, "POST", "/v1/guard/acquire", map[string]any{"url": "http://down.example/x"}, 200, &acq)
	d.call(t, "POST", "/v1/guard/report", map[string]any{"ticket": acq.Ticket, "outcome": "failed", "error_class": "timeout"}, 200, nil)
	d.call(t, "POST", "/v1/guard/acquire", map[string]any{"url": "http://down.example/x"}, 200, &acq)
	d.call(t, "POST", "/v1/guard/report", map[string]any{"ticket": acq.Ticket, "outcome": "failed"}, 200, nil)
	d.call(t, "POST", "/v1/guard/acquire", map[string]any{"url": "http://down.example/x"}, 503, nil)
	var eps struct {
		Endpoints []struct{ Endpoint, State string } `json:"endpoints"`
	}
	d.call(t, "GET", "/v1/guard?state=open", nil, 200, &eps)
	if len(eps.Endpoints) != 1 || eps.Endpoints[0].Endpoint != "http://down.example" {
		t.Fatalf("open endpoints: %+v", eps)
	}
	d.call(t, "POST", "/v1/guard/reset", map[string]any{"url": "http://down.example/"}, 204, nil)
	d.call(t, "POST", "/v1/guard/acquire", map[string]any{"url": "http://down.example/x"}, 200, &acq)
	d.call(t, "POST", "/v1/guard/report", map[string]any{"ticket": acq.Ticket, "outcome": "inconclusive"}, 200, nil)

	// Guarded fetch and the proxy.
	resp, err := http.Get(d.api + "/v1/fetch?exempt=1&url=" + url.QueryEscape(upstream.URL+"/hello?a=1"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "upstream saw /hello?a=1" {
		t.Fatalf("fetch: %d %q", resp.StatusCode, b)
	}
	ptr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: d.proxy})}
	resp, err = (&http.Client{Transport: ptr}).Get(upstream.URL + "/via-proxy")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	ptr.CloseIdleConnections()
	if string(b) != "upstream saw /via-proxy" {
		t.Fatalf("proxy: %d %q", resp.StatusCode, b)
	}

	// Hosts.
	d.call(t, "POST", "/v1/hosts/good.example/touch", map[string]any{"ok": true}, 200, nil)
	for range 3 {
		d.call(t, "POST", "/v1/hosts/bad.example/touch", map[string]any{"ok": false}, 200, nil)
	}
	d.call(t, "GET", "/v1/hosts?view=backoff", nil, 200, nil)

	// Items: every operation, leaving items in every state.
	items := []map[string]any{}
	for i := range 20 {
		items = append(items, map[string]any{"id": fmt.Sprintf("item-%02d", i), "priority": i % 3, "payload": "cGF5bG9hZA=="})
	}
	d.call(t, "POST", "/v1/items", map[string]any{"items": items}, 200, nil)
	var claim struct {
		Leases []leaseOut `json:"leases"`
	}
	d.call(t, "POST", "/v1/items/claim", map[string]any{"n": 8, "lease_seconds": 600, "worker": "e2e"}, 200, &claim)
	if len(claim.Leases) != 8 {
		t.Fatalf("claimed %d", len(claim.Leases))
	}
	l := claim.Leases
	d.call(t, "POST", "/v1/items/"+l[0].ID+"/succeed", map[string]any{"lease": l[0].Lease}, 200, nil)
	d.call(t, "POST", "/v1/items/"+l[1].ID+"/fail", map[string]any{"lease": l[1].Lease, "class": "not_found", "note": "404"}, 200, nil)
	d.call(t, "POST", "/v1/items/"+l[2].ID+"/release", map[string]any{"lease": l[2].Lease}, 200, nil)
	d.call(t, "POST", "/v1/items/"+l[3].ID+"/extend", map[string]any{"lease": l[3].Lease, "lease_seconds": 900}, 200, nil)
	d.call(t, "POST", "/v1/items/"+l[1].ID+"/observe", nil, 200, nil)
	d.call(t, "GET", "/v1/items/"+l[0].ID, nil, 200, nil)
	d.call(t, "GET", "/v1/items/stats", nil, 200, nil)

	// Budget.
	var grant struct {
		ID string `json:"id"`
	}
	d.call(t, "POST", "/v1/budget/admit", map[string]any{"source": "idx", "kind": "head_poll"}, 200, nil)
	d.call(t, "POST", "/v1/budget/admit", map[string]any{"source": "idx", "kind": "head_poll"}, 429, nil)
	d.call(t, "POST", "/v1/budget/admit", map[string]any{"kind": "bytes", "cost": 4096}, 200, &grant)
	d.call(t, "POST", "/v1/budget/grants/"+grant.ID+"/settle", map[string]any{"actual": 1024}, 200, nil)
	d.call(t, "GET", "/v1/budget", nil, 200, nil)

	// The configured feed: the leader (SQLite always leads) polls it at
	// once.
	var lead struct {
		Leading bool  `json:"leading"`
		Term    int64 `json:"term"`
	}
	d.call(t, "GET", "/v1/leader", nil, 200, &lead)
	if !lead.Leading || lead.Term != 1 {
		t.Fatalf("leader: %+v", lead)
	}
	f := d.waitFeed(t, func(f feedOut) bool { return f.LastSync != nil })
	if !f.Synced || f.ItemsTotal != 4 || f.LastError != "" {
		t.Fatalf("feed after its first poll: %+v", f)
	}
	var kept struct {
		Items []struct{ Title string } `json:"items"`
	}
	d.call(t, "GET", "/v1/feeds/films/items", nil, 200, &kept)
	if len(kept.Items) != 3 || kept.Items[0].Title != rels[3].Title {
		t.Fatalf("feed items: %+v", kept)
	}
	var bud struct {
		Sources []struct{ Name string } `json:"sources"`
		Kinds   []struct {
			Kind      string `json:"kind"`
			Allowance int64  `json:"allowance"`
		} `json:"kinds"`
	}
	d.call(t, "GET", "/v1/budget", nil, 200, &bud)
	if len(bud.Sources) != 2 || bud.Sources[0].Name != "films" || bud.Sources[1].Name != "idx" {
		t.Fatalf("budget sources from the file and the flag: %+v", bud.Sources)
	}
	for _, k := range bud.Kinds {
		if k.Kind == "validation" && k.Allowance != 50 {
			t.Fatalf("validation allowance %d, the file says 50", k.Allowance)
		}
	}

	// Live budget changes and evidence.
	d.call(t, "PUT", "/v1/budget/sources/extra", map[string]any{"owner_daily_limit": 10}, 201, nil)
	d.call(t, "POST", "/v1/budget/pause", map[string]any{"paused": true}, 200, nil)
	d.call(t, "POST", "/v1/budget/admit", map[string]any{"kind": "validation"}, 503, nil)
	d.call(t, "POST", "/v1/budget/pause", map[string]any{"paused": false}, 200, nil)
	d.call(t, "DELETE", "/v1/budget/sources/extra", nil, 204, nil)
	var rec struct {
		Fingerprint string `json:"fingerprint"`
		Verdict     string `json:"verdict"`
	}
	d.call(t, "POST", "/v1/evidence", map[string]any{"source": "films", "subject": "film-4", "verdict": "available"}, 200, &rec)
	if rec.Fingerprint != "e2e-policy" || rec.Verdict != "available" {
		t.Fatalf("evidence: %+v", rec)
	}

	// Snapshot every record, kill -9, restart on the same file, compare.
	snapshot := func(d *daemonProc) map[string]any {
		s := map[string]any{}
		for _, it := range items {
			id := it["id"].(string)
			var v map[string]any
			d.call(t, "GET", "/v1/items/"+id, nil, 200, &v)
			delete(v, "updated_at")
			s["item "+id] = v
		}
		for _, h := range []string{"good.example", "bad.example"} {
			var v map[string]any
			d.call(t, "GET", "/v1/hosts/"+h, nil, 200, &v)
			// Views and time left depend on when they are read.
			for _, k := range []string{"available", "retry_in_seconds"} {
				delete(v, k)
			}
			s["host "+h] = v
		}
		var st map[string]any
		d.call(t, "GET", "/v1/items/stats", nil, 200, &st)
		s["stats total"] = st["total"]
		s["stats by_state"] = st["by_state"]
		var bud map[string]any
		d.call(t, "GET", "/v1/budget", nil, 200, &bud)
		s["budget total"] = bud["total"]
		s["budget kinds"] = bud["kinds"]
		return s
	}
	before := snapshot(d)
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.done

	d2 := start(t, bin, db, "--config", config)
	after := snapshot(d2)
	for k, v := range before {
		if !reflect.DeepEqual(after[k], v) {
			t.Errorf("%s changed across kill -9:\nbefore %v\nafter  %v", k, v, after[k])
		}
	}
	// The feed's position survived, and the new process does not poll a
	// head read moments ago: its next poll is an interval after the last.
	f2 := d2.waitFeed(t, func(f feedOut) bool { return f.NextHeadPoll != nil })
	if !f2.Synced || f2.ItemsTotal != 4 || !f2.NextHeadPoll.After(time.Now().Add(20*time.Minute)) || idx.Count("search") != 1 {
		t.Fatalf("feed after restart: %+v; the indexer saw %d searches", f2, idx.Count("search"))
	}
	var sum struct {
		Verdict string `json:"verdict"`
	}
	d2.call(t, "GET", "/v1/evidence/film-4", nil, 200, &sum)
	if sum.Verdict != "available" {
		t.Fatalf("evidence after restart: %+v", sum)
	}
	for _, p := range []*daemonProc{d, d2} {
		if strings.Contains(p.logs.String(), e2eKey) {
			t.Fatal("the indexer's API key was logged")
		}
	}

	// The guard is in memory: a restart starts with every endpoint closed.
	d2.call(t, "GET", "/v1/guard?state=open", nil, 200, &eps)
	if len(eps.Endpoints) != 0 {
		t.Fatalf("open endpoints after restart: %+v", eps)
	}
	// A graceful stop exits 0.
	if err := d2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-d2.done
	if code := d2.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, d2.logs.String())
	}
	if !strings.Contains(d2.logs.String(), "server: stopped") {
		t.Fatalf("no clean stop in the log:\n%s", d2.logs.String())
	}
}

// feedOut is one feed of GET /v1/feeds.
type feedOut struct {
	Name         string     `json:"name"`
	Synced       bool       `json:"synced"`
	ItemsTotal   int64      `json:"items_total"`
	LastSync     *time.Time `json:"last_sync"`
	LastError    string     `json:"last_error"`
	NextHeadPoll *time.Time `json:"next_head_poll"`
}

// waitFeed polls GET /v1/feeds until its one feed satisfies cond: the
// leader's loop works in the background, and the API is how it shows.
func (d *daemonProc) waitFeed(t *testing.T, cond func(feedOut) bool) feedOut {
	t.Helper()
	var last []feedOut
	if !waitfor.Until(15*time.Second, func() bool {
		var resp struct {
			Feeds []feedOut `json:"feeds"`
		}
		d.call(t, "GET", "/v1/feeds", nil, 200, &resp)
		last = resp.Feeds
		return len(last) == 1 && cond(last[0])
	}) {
		t.Fatalf("the feed never got there: %+v\n%s", last, d.logs.String())
	}
	return last[0]
}
