package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
)

// TestOneDaemonPerSQLiteFile starts a second daemon on a file a first one
// serves: it must stop at once, naming the file and the first one's pid,
// and leave the first one serving. Once the first is killed (-9, so
// nothing is cleaned up), a new daemon starts on the same file.
func TestOneDaemonPerSQLiteFile(t *testing.T) {
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "one.db")
	first := start(t, bin, db)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, bin, "serve", "--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0", "--db", db)
	second.Env = append(second.Environ(), "HOSTGUARD_TOKEN=", "HOSTGUARD_CONFIG=")
	out, err := second.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the second daemon did not stop on its own:\n%s", out)
	}
	if code := second.ProcessState.ExitCode(); err == nil || code != 1 {
		t.Fatalf("the second daemon exited %d (%v), want 1:\n%s", code, err, out)
	}
	pid := "pid " + strconv.Itoa(first.cmd.Process.Pid)
	if !strings.Contains(string(out), db) || !strings.Contains(string(out), pid) {
		t.Fatalf("the refusal does not name %s and %s:\n%s", db, pid, out)
	}
	if strings.Contains(string(out), "listening") {
		t.Fatalf("the second daemon listened before refusing:\n%s", out)
	}
	ready(t, first)

	first.cmd.Process.Kill()
	<-first.done
	third := start(t, bin, db)
	ready(t, third)
}

// ready waits for d's /readyz to answer 200: its leader loop takes the
// lease just after it starts listening.
func ready(t *testing.T, d *daemonProc) {
	t.Helper()
	waitfor.True(t, 10*time.Second, "the daemon is ready", func() bool {
		status, _ := d.send(t, "GET", "/readyz", "")
		return status == 200
	})
}
