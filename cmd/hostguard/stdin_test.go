package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExitWithStdin: with --exit-with-stdin the daemon serves while its
// standard input stays open and stops gracefully (exit 0, store closed)
// once the last writer closes it, as when the program holding the pipe
// dies.
func TestExitWithStdin(t *testing.T) {
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "stdin.db")
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--proxy-listen", "",
		"--db", db, "--log-format", "json", "--exit-with-stdin")
	cmd.Env = append(os.Environ(), "HOSTGUARD_TOKEN=", "HOSTGUARD_CONFIG=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	done := make(chan struct{})
	var waitErr error
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range lines {
		}
		<-done
	})
	var logs []string
	listening := false
	for !listening {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the daemon exited before listening:\n%s", strings.Join(logs, "\n"))
			}
			logs = append(logs, l)
			var rec map[string]any
			listening = json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "hostguard: listening"
		case <-time.After(20 * time.Second):
			t.Fatalf("the daemon did not report its addresses:\n%s", strings.Join(logs, "\n"))
		}
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		logs = append(logs, l)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Fatalf("the daemon exited with %v after its stdin closed:\n%s", waitErr, strings.Join(logs, "\n"))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not stop after its stdin closed")
	}
	if !strings.Contains(strings.Join(logs, "\n"), "standard input closed") {
		t.Errorf("the log does not say why the daemon stopped:\n%s", strings.Join(logs, "\n"))
	}
}
