package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
)

// TestHelpGoesToStdout: asked for, help is the answer (stdout, exit 0), so
// that `hostguard status --help | less` shows it; a bad flag is still a
// usage error on stderr.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"help"}, {"status", "--help"}, {"hosts", "-h"}, {"items", "--help"},
		{"items", "claim", "--help"}, {"budget", "set-source", "--help"}, {"feeds", "--help"},
		{"reset", "--help"}, {"migrate", "--help"}, {"serve", "--help"},
	} {
		code, out, errs := run(args...)
		if code != ExitOK || !strings.Contains(out, "usage: hostguard") || errs != "" {
			t.Errorf("hostguard %s: exit %d, stdout %q, stderr %q; want usage on stdout, exit 0",
				strings.Join(args, " "), code, out, errs)
		}
	}
	code, out, errs := run("status", "--no-such-flag")
	if code != ExitUsage || out != "" || !strings.Contains(errs, "no-such-flag") {
		t.Errorf("a bad flag: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestBadNamesAndURLsAreRefusedBeforeAnythingIsCreated: exit 3, and the
// daemon holds no record afterwards.
func TestBadNamesAndURLsAreRefusedBeforeAnythingIsCreated(t *testing.T) {
	addr := daemon(t, "")
	for _, args := range [][]string{
		{"reset", "ftp://x.example/"},
		{"reset", "not a url"},
		{"hosts", "bad\x07name"},
		{"hosts", "user@host.example"},
		{"hosts", "no.such.host"},
	} {
		code, out, errs := run(append(args, "--addr", addr)...)
		if code != ExitRefused || out != "" || errs == "" {
			t.Errorf("hostguard %q: exit %d, stdout %q, stderr %q; want exit %d and a reason", args, code, out, errs, ExitRefused)
		}
	}
	out := mustRun(t, "status", "--addr", addr, "--json")
	var st api.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Guard.Endpoints != 0 || st.Hosts == nil || st.Hosts.Known != 0 {
		t.Fatalf("after refused commands the daemon holds %d endpoints and %+v hosts; want none", st.Guard.Endpoints, st.Hosts)
	}
}

// TestJSONErrors: under --json a failure is one JSON object on stderr,
// with the daemon's status and the field it blamed; stdout stays empty.
func TestJSONErrors(t *testing.T) {
	addr := daemon(t, "")
	code, out, errs := run("items", "get", "nope", "--addr", addr, "--json")
	var e jsonError
	if code != ExitRefused || out != "" || json.Unmarshal([]byte(errs), &e) != nil || e.Status != 404 || e.Error == "" {
		t.Fatalf("items get of a missing item: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = run("reset", "ftp://x.example/", "--addr", addr, "--json")
	if code != ExitRefused || json.Unmarshal([]byte(errs), &e) != nil || !strings.Contains(e.Error, "ftp") {
		t.Fatalf("reset ftp under --json: exit %d, stderr %q", code, errs)
	}
	// The daemon is unreachable: still JSON, exit 1.
	e = jsonError{}
	code, _, errs = run("status", "--addr", "http://127.0.0.1:1", "--json", "--timeout", "2s")
	if code != ExitError || json.Unmarshal([]byte(errs), &e) != nil || e.Status != 0 {
		t.Fatalf("unreachable daemon under --json: exit %d, stderr %q", code, errs)
	}
}

// TestEmptyStates: an empty daemon says so in words, not with a lone header.
func TestEmptyStates(t *testing.T) {
	addr := daemon(t, "")
	out := mustRun(t, "status", "--addr", addr)
	for _, want := range []string{"no endpoint is open", "every host is healthy", "retry queue is empty"} {
		if !strings.Contains(out, want) {
			t.Errorf("status of an empty daemon lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ENDPOINT") || strings.Contains(out, "HOST ") {
		t.Errorf("status of an empty daemon prints a table header:\n%s", out)
	}
	if out := mustRun(t, "hosts", "--addr", addr, "--view", "unhealthy"); out != "no hosts in view unhealthy\n" {
		t.Errorf("hosts --view unhealthy: %q", out)
	}
	if out := mustRun(t, "items", "claim", "--addr", addr); !strings.HasPrefix(out, "no item is due") {
		t.Errorf("items claim on an empty queue: %q", out)
	}
}

// TestStatusListsUnhealthyHosts: a host with a failure is in the status
// table, whether or not its backoff has run out.
func TestStatusListsUnhealthyHosts(t *testing.T) {
	addr := daemon(t, "")
	// A success first: without a recent one, outage protection would
	// not count the failure.
	touch(t, addr, "ok.example.net", true)
	touch(t, addr, "files.example.net", false)
	out := mustRun(t, "status", "--addr", addr)
	if !strings.Contains(out, "1 unhealthy") || !strings.Contains(out, "files.example.net") || strings.Contains(out, "every host is healthy") {
		t.Fatalf("status after a failed touch:\n%s", out)
	}
}

func touch(t *testing.T, addr, host string, ok bool) {
	t.Helper()
	resp, err := http.Post(addr+"/v1/hosts/"+host+"/touch", "application/json", strings.NewReader(fmt.Sprintf(`{"ok":%t}`, ok)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("touch %s: %s", host, resp.Status)
	}
}

func TestBytesText(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 52428800: "50.0 MiB", 536870912: "512.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTimesNameTheirZoneAndDistance: local by default, UTC with --utc,
// always with the zone and how long ago or until.
func TestTimesNameTheirZoneAndDistance(t *testing.T) {
	defer func(d displaySettings) { display = d }(display)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cet := time.FixedZone("CET", 3600)
	display = displaySettings{loc: cet, now: func() time.Time { return now }}
	if got, want := when(now.Add(-3*time.Minute)), "2026-12-01 12:57:00 CET, 3m ago"; got != want {
		t.Errorf("local: %q, want %q", got, want)
	}
	display = newDisplay(true)
	display.now = func() time.Time { return now }
	if got, want := when(now.Add(5*time.Hour)), "2026-12-01 17:00:00 UTC, in 5h"; got != want {
		t.Errorf("--utc: %q, want %q", got, want)
	}
	if when(time.Time{}) != "-" {
		t.Error("the zero time is not shown as -")
	}
	// --utc reaches the display setting, from a local one.
	display = newDisplay(false)
	addr := daemon(t, "")
	mustRun(t, "status", "--addr", addr, "--utc")
	if display.loc != time.UTC {
		t.Error("--utc did not select UTC")
	}
}

// TestBudgetResetSource: an override set at run time is dropped and the
// configured settings come back; a run-time source, an unknown one and a
// bad name are refused with exit 3.
func TestBudgetResetSource(t *testing.T) {
	addr := daemon(t, "")
	mustRun(t, "budget", "set-source", "idx", "--daily-limit", "5", "--addr", addr)
	mustRun(t, "budget", "set-source", "extra", "--addr", addr)
	if out := mustRun(t, "budget", "reset-source", "idx", "--addr", addr); !strings.Contains(out, "back on its configured settings") {
		t.Fatalf("reset-source: %q", out)
	}
	out := mustRun(t, "budget", "--addr", addr, "--json")
	var rep api.BudgetReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range rep.Sources {
		if s.Name == "idx" {
			found = true
			if s.DailyLimit != 20 {
				t.Fatalf("idx after reset-source: daily limit %d, want the configured 20", s.DailyLimit)
			}
		}
	}
	if !found {
		t.Fatal("idx is missing from the budget report after reset-source")
	}
	if out := mustRun(t, "budget", "reset-source", "idx", "--addr", addr); !strings.Contains(out, "no run-time settings") {
		t.Fatalf("a second reset-source: %q", out)
	}
	for _, name := range []string{"extra", "unknown", "bad\x07"} {
		if code, _, errs := run("budget", "reset-source", name, "--addr", addr); code != ExitRefused {
			t.Errorf("reset-source %q: exit %d (%s), want %d", name, code, errs, ExitRefused)
		}
	}
}
