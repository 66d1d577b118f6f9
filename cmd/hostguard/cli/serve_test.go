package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeHelpDocumentsEveryFlag(t *testing.T) {
	code, errs, _ := run("serve", "--help")
	if code != ExitOK {
		t.Fatalf("serve --help: exit %d", code)
	}
	for _, flag := range []string{"config", "listen", "proxy-listen", "db", "token", "allow-private", "log-format",
		"guard-threshold", "guard-window", "guard-open-for", "guard-max-endpoints", "header-timeout", "idle-timeout", "ticket-lease"} {
		if !strings.Contains(errs, "-"+flag) {
			t.Errorf("serve --help does not document --%s", flag)
		}
		env := "HOSTGUARD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
		if !strings.Contains(errs, env) {
			t.Errorf("serve --help does not name %s", env)
		}
	}
}

func TestServeRefusesBadSettings(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "beyond loopback"},
		{[]string{"--listen", "127.0.0.1:0", "--proxy-listen", ":0"}, "proxy-listen"},
		{[]string{"--log-format", "xml"}, "log-format"},
		{[]string{"--guard-threshold", "-1"}, "guard-threshold"},
		{[]string{"--ticket-lease", "-1s"}, "ticket-lease"},
		{[]string{"--header-timeout", "-1s"}, "header-timeout"},
		{[]string{"stray"}, "unexpected argument"},
	}
	for _, c := range cases {
		code, _, errs := run(append([]string{"serve"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want usage naming %q", c.args, code, errs, c.want)
		}
	}
	t.Setenv("HOSTGUARD_GUARD_WINDOW", "soon")
	code, _, errs := run("serve")
	if code != ExitUsage || !strings.Contains(errs, "HOSTGUARD_GUARD_WINDOW") {
		t.Errorf("bad environment value: exit %d, %q", code, errs)
	}
}

func TestDefaultDBPathIsPrivateStateDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	p, err := defaultDBPath()
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(dir, "hostguard", "hostguard.db") {
		t.Fatalf("path %q", p)
	}
	fi, err := os.Stat(filepath.Dir(p))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state dir: %v %v", fi.Mode(), err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", dir)
	if p, _ := defaultDBPath(); p != filepath.Join(dir, ".local", "state", "hostguard", "hostguard.db") {
		t.Fatalf("path without XDG_STATE_HOME: %q", p)
	}
}

// TestServeRunsAndStopsOnCancel runs the serve command in process, reads
// the bound addresses from its JSON log, uses the API and stops it.
func TestServeRunsAndStopsOnCancel(t *testing.T) {
	t.Setenv("HOSTGUARD_LOG_FORMAT", "json")
	db := filepath.Join(t.TempDir(), "serve.db")
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- serve(ctx, []string{"--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0", "--db", db, "--token", "tt"}, pw)
		pw.Close()
	}()
	var logs bytes.Buffer
	sc := bufio.NewScanner(pr)
	var api string
	for sc.Scan() {
		logs.WriteString(sc.Text() + "\n")
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "hostguard: listening" {
			api = line["api"].(string)
			if line["proxy"] == "off" || line["auth"] != true {
				t.Fatalf("listening line: %v", line)
			}
			break
		}
	}
	if api == "" {
		t.Fatalf("no listening line in:\n%s", logs.String())
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(&logs, pr)
		close(copied)
	}()

	resp, err := http.Get("http://" + api + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	out := mustRun(t, "items", "add", "x", "--addr", api, "--token", "tt")
	if !strings.Contains(out, "added 1") {
		t.Fatalf("items add: %q", out)
	}
	cancel()
	select {
	case code := <-exit:
		if code != ExitOK {
			t.Fatalf("serve exit %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
	<-copied
	if strings.Contains(logs.String(), "\"tt\"") {
		t.Fatal("the token was logged")
	}
	out = mustRun(t, "migrate", "--db", db)
	if !strings.HasPrefix(out, "schema version ") {
		t.Fatalf("migrate: %q", out)
	}
}

func TestParseBudgetSource(t *testing.T) {
	for in, want := range map[string]string{
		"idx":              "idx <nil> normal",
		"idx.example:1000": "idx.example 1000 normal",
		"idx:500:gentle":   "idx 500 gentle",
		"a:0:unlimited":    "a 0 unlimited",
	} {
		src, err := parseBudgetSource(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		limit := "<nil>"
		if src.OwnerDailyLimit != nil {
			limit = fmt.Sprint(*src.OwnerDailyLimit)
		}
		if got := src.Name + " " + limit + " " + src.Share.String(); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", ":5", "a:b", "a:-1", "a:1:greedy", "a:1:gentle:x"} {
		if _, err := parseBudgetSource(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if code, _, errs := run("serve", "--budget-source", "x:lots"); code != ExitUsage || !strings.Contains(errs, "daily limit") {
		t.Errorf("serve with a bad --budget-source: exit %d, %q", code, errs)
	}
}
