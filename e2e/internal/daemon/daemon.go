// Package daemon runs the real hostguard binary for the tests of this
// module, as cmd/hostguard's own end-to-end tests do.
package daemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/logtest"
)

// IndexerKey is the API key the daemon reads from E2E_INDEXER_KEY, for a
// feed over a fake indexer (internal/fakeindexer) that wants it.
const IndexerKey = "e2e-indexer-key-9f8e7d"

// Proc is one running hostguard binary.
type Proc struct {
	API   string // http://host:port
	Proxy string // host:port
	Logs  *logtest.Buffer
	cmd   *exec.Cmd
	done  chan struct{}
}

// Build builds the real binary once for the test, in the library's own
// module (its dependencies, not this module's).
func Build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hostguard")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/hostguard")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Start runs the binary on free loopback ports (port 0; the addresses are
// read from its JSON "listening" log line) over the database db, with
// private destinations allowed and short upstream timeouts; args come
// after those and may override them.
func Start(t *testing.T, bin, db string, args ...string) *Proc {
	t.Helper()
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--proxy-listen", "127.0.0.1:0",
		"--db", db, "--log-format", "json", "--allow-private=true", "--budget-source", "idx:100",
		"--header-timeout", "500ms", "--idle-timeout", "500ms"}, args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOSTGUARD_TOKEN=", "HOSTGUARD_DISABLE_GUARD=", "HOSTGUARD_CONFIG=", "E2E_INDEXER_KEY="+IndexerKey)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &Proc{cmd: cmd, Logs: &logtest.Buffer{}, done: make(chan struct{})}
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	found := make(chan map[string]any, 1)
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			d.Logs.Write(append(sc.Bytes(), '\n'))
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "hostguard: listening" {
				found <- line
			}
		}
		d.cmd.Wait()
	}()
	select {
	case line := <-found:
		d.API = "http://" + fmt.Sprint(line["api"])
		d.Proxy = fmt.Sprint(line["proxy"])
	case <-d.done:
		t.Fatalf("the daemon exited before listening:\n%s", d.Logs.String())
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not report its addresses")
	}
	return d
}
