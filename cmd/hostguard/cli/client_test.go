package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server"
	"github.com/hostguard/hostguard/store/sqlite"
)

// daemon serves a real Server on 127.0.0.1 over a fresh SQLite file and
// returns its address.
func daemon(t *testing.T, token string) string {
	t.Helper()
	return daemonWith(t, token, nil)
}

// daemonWith is daemon with feeds, an elector and an evidence book.
func daemonWith(t *testing.T, token string, feeds []server.Feed) string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hg.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	sched, err := retry.New(st, retry.Config{Jitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	bud, err := budget.New(st, budget.Config{Sources: []budget.Source{{Name: "idx", OwnerDailyLimit: budget.Int(20)}}})
	if err != nil {
		t.Fatal(err)
	}
	el, err := leader.New(st, leader.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	book, err := evidence.New(st, evidence.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	tracker, err := health.New(st, health.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Token: token, Logger: log, AllowPrivate: true, Budget: bud,
		Health: tracker, Retry: sched,
		Elector: el, Evidence: book, FeedStore: st, Feeds: feeds})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		book.Close()
		st.Close()
	})
	return "http://" + ln.Addr().String()
}

// run runs the CLI and returns its exit code, stdout and stderr.
func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := run(args...)
	if code != ExitOK {
		t.Fatalf("hostguard %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func TestCLIAgainstADaemon(t *testing.T) {
	addr := daemon(t, "t0ken")
	a := []string{"--addr", addr, "--token", "t0ken"}

	out := mustRun(t, append([]string{"items", "add", "job-1", "job-2", "--priority", "3", "--payload", "hello"}, a...)...)
	if out != "added 2, already queued 0\n" {
		t.Fatalf("items add: %q", out)
	}
	out = mustRun(t, append([]string{"items", "claim", "--n", "1", "--lease", "1m", "--json"}, a...)...)
	var claim struct {
		Leases []api.Lease `json:"leases"`
	}
	if err := json.Unmarshal([]byte(out), &claim); err != nil || len(claim.Leases) != 1 || string(claim.Leases[0].Payload) != "hello" {
		t.Fatalf("items claim --json: %q (%v)", out, err)
	}
	l := claim.Leases[0]
	out = mustRun(t, append([]string{"items", "fail", l.ID, "--lease", l.Token, "--class", "timeout", "--host", "Files.Example"}, a...)...)
	if !strings.Contains(out, "scheduled") || !strings.Contains(out, "timeout") || !strings.Contains(out, "files.example") {
		t.Fatalf("items fail: %q", out)
	}
	// The spent lease is refused, with the exit code for a refusal.
	code, _, errs := run(append([]string{"items", "succeed", l.ID, "--lease", l.Token}, a...)...)
	if code != ExitRefused || !strings.Contains(errs, "lease lost") {
		t.Fatalf("succeed with a spent lease: exit %d, %q", code, errs)
	}
	out = mustRun(t, append([]string{"items", "get", l.ID}, a...)...)
	if !strings.Contains(out, l.ID) || !strings.Contains(out, "scheduled") {
		t.Fatalf("items get: %q", out)
	}
	out = mustRun(t, append([]string{"items", "stats"}, a...)...)
	if !strings.Contains(out, "2 items") || !strings.Contains(out, "timeout") {
		t.Fatalf("items stats: %q", out)
	}

	mustRun(t, append([]string{"hosts"}, a...)...)
	// A host the daemon has no record of is not shown as a healthy one
	// (exit 3); a touched one is.
	if code, _, _ := run(append([]string{"hosts", "unknown.example", "--json"}, a...)...); code != ExitRefused {
		t.Fatalf("hosts of an unknown name: exit %d, want %d", code, ExitRefused)
	}
	req, _ := http.NewRequest("POST", addr+"/v1/hosts/known.example/touch", strings.NewReader(`{"ok":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer t0ken")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("touch: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	out = mustRun(t, append([]string{"hosts", "known.example", "--json"}, a...)...)
	if !strings.Contains(out, `"healthy":true`) {
		t.Fatalf("hosts NAME --json: %q", out)
	}
	code, _, _ = run(append([]string{"hosts", "--view", "sideways"}, a...)...)
	if code != ExitRefused {
		t.Fatalf("hosts with a bad view: exit %d, want %d", code, ExitRefused)
	}

	out = mustRun(t, append([]string{"reset", "https://user:pw@Some.Example/path?key=v"}, a...)...)
	if out != "reset https://some.example\n" {
		t.Fatalf("reset printed %q; it must print the origin only", out)
	}
	out = mustRun(t, append([]string{"reset", "http://[::1]:8080/x", "--json"}, a...)...)
	var reset struct{ Endpoint string }
	if err := json.Unmarshal([]byte(out), &reset); err != nil || reset.Endpoint != "http://[::1]:8080" {
		t.Fatalf("reset --json printed %q (%v); want the origin as JSON", out, err)
	}
	if out = mustRun(t, append([]string{"reset", "--all"}, a...)...); out != "reset every endpoint\n" {
		t.Fatalf("reset --all printed %q", out)
	}
	out = mustRun(t, append([]string{"status"}, a...)...)
	for _, want := range []string{"endpoints: 2 known", "items: 2 total", "hosts: 1 known"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	// Budget: the source allows 2 a day, 3 s apart.
	out = mustRun(t, append([]string{"budget", "admit", "--kind", "head_poll", "--source", "idx"}, a...)...)
	if !strings.Contains(out, `"kind":"head_poll"`) {
		t.Fatalf("budget admit: %q", out)
	}
	code, _, errs = run(append([]string{"budget", "admit", "--kind", "head_poll", "--source", "idx"}, a...)...)
	if code != ExitRefused || !strings.Contains(errs, "retry after") {
		t.Fatalf("paced admission: exit %d, %q", code, errs)
	}
	grant := strings.TrimSpace(mustRun(t, append([]string{"budget", "admit", "--kind", "bytes", "--cost", "1000"}, a...)...))
	mustRun(t, append([]string{"budget", "settle", grant, "--actual", "10"}, a...)...)
	out = mustRun(t, append([]string{"budget"}, a...)...)
	if !strings.Contains(out, "idx") || !strings.Contains(out, "bytes") {
		t.Fatalf("budget report: %q", out)
	}

	// Wrong token: refused. No daemon: an error. Bad flags: usage.
	if code, _, _ := run("status", "--addr", addr, "--token", "nope"); code != ExitRefused {
		t.Fatalf("wrong token: exit %d", code)
	}
	if code, _, _ := run("status", "--addr", "http://127.0.0.1:1"); code != ExitError {
		t.Fatalf("no daemon: exit %d", code)
	}
	for _, args := range [][]string{
		{"status", "--bogus"},
		{"status", "extra"},
		{"reset"},
		{"reset", "--all", "http://a.example/"},
		{"items"},
		{"items", "frob"},
		{"items", "get"},
		{"items", "fail", "x", "--lease", "1"},
		{"items", "add"},
		{"status", "--addr", "ftp://x"},
		{"status", "--addr", "http://u:p@127.0.0.1:1"},
	} {
		if code, _, _ := run(args...); code != ExitUsage {
			t.Errorf("hostguard %s: exit %d, want %d", strings.Join(args, " "), code, ExitUsage)
		}
	}
}

func TestCLIReadsAddrAndTokenFromEnvironment(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		w.Write([]byte(`{"total":0,"by_state":{},"by_class":{},"due_now":0}`))
	}))
	defer srv.Close()
	t.Setenv("HOSTGUARD_ADDR", strings.TrimPrefix(srv.URL, "http://"))
	t.Setenv("HOSTGUARD_TOKEN", "from-env")
	mustRun(t, "items", "stats")
	if got != "Bearer from-env" {
		t.Fatalf("Authorization %q", got)
	}
}
