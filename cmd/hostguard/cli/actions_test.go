package cli

import (
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
