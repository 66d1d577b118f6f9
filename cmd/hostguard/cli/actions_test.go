package cli

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestOperatorActions: the commands the dashboard shows beside its
// buttons end a host's backoff, make an item due and forget it.
func TestOperatorActions(t *testing.T) {
	addr := daemon(t, "")
	touch(t, addr, "ok.example.net", true)
	touch(t, addr, "files.example.net", false)
	if out := mustRun(t, "hosts", "--addr", addr, "--reset", "files.example.net"); !strings.HasPrefix(out, "reset:") {
		t.Fatalf("hosts --reset: %q", out)
	}
	if out := mustRun(t, "hosts", "--addr", addr, "--view", "unhealthy"); out != "no hosts in view unhealthy\n" {
		t.Fatalf("after the reset, hosts --view unhealthy: %q", out)
	}
	if out := mustRun(t, "hosts", "--addr", addr, "--reset", "files.example.net"); !strings.HasPrefix(out, "nothing to reset") {
		t.Fatalf("a second hosts --reset: %q", out)
	}
	if code, _, _ := run("hosts", "--addr", addr, "--reset"); code != ExitUsage {
		t.Fatalf("hosts --reset without a name: exit %d", code)
	}

	mustRun(t, "items", "add", "--addr", addr, "a1")
	if out := mustRun(t, "items", "due-now", "--addr", addr, "a1"); out != "not moved: the item is pending\n" {
		t.Fatalf("due-now of a due item: %q", out)
	}
	if out := mustRun(t, "items", "forget", "--addr", addr, "a1"); out != "forgotten\n" {
		t.Fatalf("forget: %q", out)
	}
	if code, _, _ := run("items", "due-now", "--addr", addr, "a1"); code != ExitRefused {
		t.Fatalf("due-now of a forgotten item: exit %d, want %d", code, ExitRefused)
	}
	if code, _, _ := run("items", "forget", "--addr", addr, "a1"); code != ExitRefused {
		t.Fatalf("forget of a forgotten item: exit %d, want %d", code, ExitRefused)
	}
}

// TestStatusLabels pins the words `hostguard status` and `hosts` use, the
// same as the dashboard's: an open endpoint's remaining time is "TRIAL
// IN" (when it lets a trial through), a host's is "RETRY IN".
func TestStatusLabels(t *testing.T) {
	addr := daemon(t, "")
	for range 2 {
		var tk struct {
			Ticket string `json:"ticket"`
		}
		post(t, addr, "/v1/guard/acquire", `{"url":"http://127.0.0.1:9/"}`, &tk)
		post(t, addr, "/v1/guard/report", `{"ticket":"`+tk.Ticket+`","outcome":"failed","error_class":"refused"}`, nil)
	}
	touch(t, addr, "ok.example.net", true)
	touch(t, addr, "files.example.net", false)
	mustRun(t, "items", "add", "--addr", addr, "a1")
	out := mustRun(t, "status", "--addr", addr)
	// The endpoints' head, then the hosts': the dashboard's words.
	if !regexp.MustCompile(`(?m)^ENDPOINT +STATE +TRIAL IN +FAILURES +LAST FAILURE$`).MatchString(out) {
		t.Errorf("status's endpoint columns are not ENDPOINT STATE TRIAL IN FAILURES LAST FAILURE:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^HOST +GUARD +HEALTHY +AVAILABLE +FAILURES IN A ROW +RETRY IN +LAST SUCCESS +LAST FAILURE$`).MatchString(out) {
		t.Errorf("status's host columns are not the dashboard's words:\n%s", out)
	}
	// A host's row says what the guard says of it too, and the host the
	// guard holds an open endpoint on, unknown to the tracker, is named.
	if !regexp.MustCompile(`(?m)^files\.example\.net +closed +false +false +1 `).MatchString(out) ||
		!strings.Contains(out, "\nopen endpoints on hosts the tracker has no failure of: 127.0.0.1 (the guard's view, above)\n") {
		t.Errorf("status does not show the guard's view of each host:\n%s", out)
	}
	touch(t, addr, "127.0.0.1", false)
	if out := mustRun(t, "status", "--addr", addr); !regexp.MustCompile(`(?m)^127\.0\.0\.1 +1 open +false +false +1 `).MatchString(out) ||
		strings.Contains(out, "no failure of") {
		t.Errorf("status after the tracker heard of 127.0.0.1:\n%s", out)
	}
	if strings.Contains(out, "OPEN FOR") || strings.Contains(out, "FAILS IN A ROW") {
		t.Errorf("status says OPEN FOR or FAILS IN A ROW:\n%s", out)
	}
	// Due now: the same words in status and items stats, the same count.
	if !strings.Contains(out, "\nitems: 1 total, 1 due now") {
		t.Errorf("status's items line:\n%s", out)
	}
	if out := mustRun(t, "items", "stats", "--addr", addr); !strings.HasPrefix(out, "1 items, 1 due now\n") {
		t.Errorf("items stats:\n%s", out)
	}
}

func post(t *testing.T, addr, path, body string, out any) {
	t.Helper()
	resp, err := http.Post(addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", path, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}
