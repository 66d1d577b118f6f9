package reliability

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/logtest"
)

// The binary is built once per test process and shared by every test.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// binary builds cmd/hostguard into a temporary folder, once.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "hostguard-reliability-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "hostguard")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/hostguard")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/hostguard: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func removeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// daemon is one running `hostguard serve` process.
type daemon struct {
	cmd   *exec.Cmd
	api   string // http://127.0.0.1:port
	cycle int    // the cycle it was started in
	logs  *logtest.Buffer
	done  chan struct{} // closed once the process has exited
}

// startDaemon runs the binary on a free loopback port over the store dsn
// and returns once it reports its address.
func startDaemon(bin, dsn string, cycle int) (*daemon, error) {
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--proxy-listen", "",
		"--db", dsn, "--log-format", "json")
	// The developer's own HOSTGUARD_* settings (a token, a config file)
	// must not change what is tested.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOSTGUARD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{cmd: cmd, cycle: cycle, logs: &logtest.Buffer{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			d.logs.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, API string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "hostguard: listening" {
				addr <- line.API
			}
		}
		cmd.Wait()
	}()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case a := <-addr:
		d.api = "http://" + a
		return d, nil
	case <-d.done:
		return nil, fmt.Errorf("the daemon exited before listening:\n%s", d.logs.String())
	case <-timer.C:
		d.kill()
		return nil, fmt.Errorf("the daemon did not report its address in 30 s:\n%s", d.logs.String())
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (d *daemon) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// stop asks the daemon to stop (SIGTERM) and reports a bad exit.
func (d *daemon) stop() error {
	d.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-d.done:
	case <-timer.C:
		d.kill()
		return errors.New("the daemon did not stop within 30 s of SIGTERM")
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("the daemon exited %d after SIGTERM", code)
	}
	return nil
}

// tail returns the last n lines of the daemon's log.
func (d *daemon) tail(n int) string {
	lines := strings.Split(strings.TrimRight(d.logs.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cluster is the daemons of one scenario over one store: a fixed number of
// slots, each holding a running process or nil while it is down. Workers
// pick a running one for every request.
type cluster struct {
	bin, dsn string

	mu      sync.Mutex
	slots   []*daemon
	changed chan struct{} // closed and replaced whenever a slot changes
	cycle   int
	all     []*daemon // every process started, for logs on failure
}

func newCluster(bin, dsn string, n int) *cluster {
	return &cluster{bin: bin, dsn: dsn, slots: make([]*daemon, n), changed: make(chan struct{})}
}

// currentCycle is the kill cycle in progress, for the logs.
func (c *cluster) currentCycle() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cycle
}

func (c *cluster) setCycle(n int) {
	c.mu.Lock()
	c.cycle = n
	c.mu.Unlock()
}

func (c *cluster) set(i int, d *daemon) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slots[i] = d
	close(c.changed)
	c.changed = make(chan struct{})
}

// start starts the daemon of slot i.
func (c *cluster) start(i int) error {
	d, err := startDaemon(c.bin, c.dsn, c.currentCycle())
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.all = append(c.all, d)
	c.mu.Unlock()
	c.set(i, d)
	return nil
}

// kill takes slot i out of the workers' choice first, so that they stop
// sending to it, then kills its process.
func (c *cluster) kill(i int) {
	c.mu.Lock()
	d := c.slots[i]
	c.mu.Unlock()
	if d == nil {
		return
	}
	c.set(i, nil)
	d.kill()
}

// killAll kills every running daemon.
func (c *cluster) killAll() {
	for i := range c.slots {
		c.kill(i)
	}
}

// pick returns a running daemon, waiting while none is; it fails only
// when done is closed.
func (c *cluster) pick(done <-chan struct{}, rng *rand.Rand) (*daemon, bool) {
	for {
		c.mu.Lock()
		var up []*daemon
		for _, d := range c.slots {
			if d != nil {
				up = append(up, d)
			}
		}
		changed := c.changed
		c.mu.Unlock()
		if len(up) > 0 {
			return up[rng.IntN(len(up))], true
		}
		select {
		case <-changed:
		case <-done:
			return nil, false
		}
	}
}

// logTails is the end of every process's log, for a failure message.
func (c *cluster) logTails(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for i, d := range c.all {
		if i < len(c.all)-3 {
			continue // the last few processes are the ones that matter
		}
		fmt.Fprintf(&b, "--- daemon started in cycle %d (%s):\n%s\n", d.cycle, d.api, d.tail(n))
	}
	return b.String()
}
