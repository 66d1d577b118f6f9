package reliability

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/store/storetest"
)

// modeEnv selects the mode; without it the tests skip.
const modeEnv = "HOSTGUARD_RELIABILITY"

// summaryEnv names a file that every scenario appends its figures to, one
// line each, for scripts/reliability.sh to print at the end.
const summaryEnv = "HOSTGUARD_RELIABILITY_SUMMARY"

// workers is how many HTTP clients work at once in every scenario.
const workers = 4

// mode is how hard a run tries.
type mode struct {
	name         string
	cycles       int           // kill cycles per scenario
	upMin, upMax time.Duration // how long a daemon runs before it is killed
	budget       time.Duration // per scenario: the cycles stop early past it
	pgRestart    bool          // restart PostgreSQL once in the PostgreSQL scenario
}

func selectMode(t *testing.T) mode {
	switch v := os.Getenv(modeEnv); v {
	case "":
		t.Skipf("kill -9 cycles against the real daemon: set %s=short or long (scripts/reliability.sh does)", modeEnv)
	case "short":
		return mode{name: "short", cycles: 3, upMin: 300 * time.Millisecond, upMax: 1200 * time.Millisecond, budget: time.Minute}
	case "long":
		return mode{name: "long", cycles: 40, upMin: 500 * time.Millisecond, upMax: 3 * time.Second, budget: 5 * time.Minute, pgRestart: true}
	default:
		t.Fatalf("%s=%q: want short or long", modeEnv, v)
	}
	return mode{}
}

func TestReliabilitySQLite(t *testing.T) {
	m := selectMode(t)
	runScenario(t, m, scenario{name: "sqlite", dsn: filepath.Join(t.TempDir(), "hostguard.db"), daemons: 1})
}

func TestReliabilityPostgres(t *testing.T) {
	m := selectMode(t)
	sc := scenario{name: "postgres", dsn: storetest.PostgresDSN(t), daemons: 1}
	if m.pgRestart {
		if why := cannotRestartPostgres(); why != "" {
			t.Logf("no PostgreSQL restart in this run: %s", why)
		} else {
			sc.pgRestartAt = m.cycles / 2
		}
	}
	runScenario(t, m, sc)
}

func TestReliabilityTwoDaemons(t *testing.T) {
	m := selectMode(t)
	runScenario(t, m, scenario{name: "postgres, two daemons", dsn: storetest.PostgresDSN(t), daemons: 2})
}

// scenario is one store and the daemons over it.
type scenario struct {
	name        string
	dsn         string
	daemons     int
	pgRestartAt int // the cycle in which PostgreSQL restarts; 0 for none
}

// runScenario starts the daemons, lets the workers loose, kills a daemon
// with SIGKILL at a random moment of every cycle and restarts it on the
// same store, then kills everything once more, starts one daemon and
// checks the workers' logs against what it holds.
func runScenario(t *testing.T, m mode, sc scenario) {
	bin := binary(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("%s: seed %d, %d daemon(s), up to %d cycles", sc.name, seed, sc.daemons, m.cycles)
	rng := rand.New(rand.NewPCG(seed, 0))

	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2 * workers}
	hc := &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	c := newCluster(bin, sc.dsn, sc.daemons)
	t.Cleanup(c.killAll)
	c.setCycle(1)
	for i := range sc.daemons {
		if err := c.start(i); err != nil {
			t.Fatal(err)
		}
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = newWorker(i, c, hc, seed, done)
		wg.Go(ws[i].run)
	}
	stopWorkers := sync.OnceFunc(func() { close(done); wg.Wait() })
	t.Cleanup(stopWorkers)
	protoErr := func() error {
		for _, w := range ws {
			if err := w.protocolErr(); err != nil {
				return err
			}
		}
		return nil
	}

	began := time.Now()
	cycles := 0
	for cycle := 1; cycle <= m.cycles && protoErr() == nil; cycle++ {
		if time.Since(began) > m.budget {
			t.Logf("%s: stopping after %d cycles: the %v budget is spent", sc.name, cycles, m.budget)
			break
		}
		up := m.upMin + time.Duration(rng.Int64N(int64(m.upMax-m.upMin)))
		// Waiting is the point here: the kill must land at an arbitrary
		// moment of the workers' traffic.
		time.Sleep(up)
		if cycle == sc.pgRestartAt {
			restartPostgres(t, c, hc)
		}
		i := rng.IntN(sc.daemons)
		c.kill(i)
		c.setCycle(cycle + 1)
		if err := c.start(i); err != nil {
			t.Fatalf("cycle %d: restarting daemon %d: %v", cycle, i, err)
		}
		cycles++
	}
	stopWorkers()
	stoppedAt := time.Now()
	if err := protoErr(); err != nil {
		t.Fatalf("%s: a worker stopped: %v\n%s", sc.name, err, c.logTails(20))
	}

	// The final state is read after one more crash, by a fresh process.
	c.killAll()
	c.setCycle(cycles + 2)
	if err := c.start(0); err != nil {
		t.Fatalf("final restart: %v", err)
	}
	h := &history{}
	var n counts
	for _, w := range ws {
		h.adds = append(h.adds, w.adds...)
		h.leases = append(h.leases, w.leases...)
		n.plus(w.n)
	}
	final := readItems(t, c, hc, h.ids())
	vs := h.check(final, stoppedAt)
	elapsed := time.Since(began).Round(time.Second)
	kinds := map[string]int{}
	for _, v := range vs {
		kinds[v.kind]++
	}
	lostN := kinds["lost add"] + kinds["lost claim"] + kinds["lost succeed"] + kinds["lost fail"] + kinds["lost extend"]
	line := fmt.Sprintf("%s (%s): %d cycles in %v; %d acknowledged writes (%d adds, %d claims of which %d reclaims, %d succeeds, %d fails, %d extends) on %d items; "+
		"%d unknown outcomes, %d lease-lost answers, %d 5xx; lost %d, overlaps %d, returned %d, other %d",
		sc.name, m.name, cycles, elapsed, n.writes(), n.adds, n.claims, h.reclaims(), n.succeeds, n.fails, n.extends, len(final),
		n.unknown, n.lost, n.fiveXX, lostN, kinds["overlap"], kinds["returned"], len(vs)-lostN-kinds["overlap"]-kinds["returned"])
	t.Log(line)
	for _, w := range ws {
		for _, e := range w.fiveXX {
			t.Logf("worker %d got %s", w.id, e)
		}
	}
	appendSummary(t, line)
	d := c.slots[0]
	c.set(0, nil)
	if err := d.stop(); err != nil {
		t.Errorf("final daemon: %v\n%s", err, d.tail(20))
	}
	if n.succeeds == 0 || n.fails == 0 || n.extends == 0 || cycles == 0 {
		t.Errorf("%s: the workers did too little to judge: %+v in %d cycles", sc.name, n, cycles)
	}
	if len(vs) > 0 {
		t.Fatalf("%s: %d violations:\n%s\n%s", sc.name, len(vs), summarize(vs, 5), c.logTails(20))
	}
}

// readItems reads every id from the running daemon of slot 0, four at a
// time.
func readItems(t *testing.T, c *cluster, hc *http.Client, ids []string) map[string]finalItem {
	api := c.slots[0].api
	out := make(map[string]finalItem, len(ids))
	var mu sync.Mutex
	var firstErr error
	next := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for id := range next {
				it, err := readItem(hc, api, id)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out[id] = it
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("reading the final state: %v\n%s", firstErr, c.logTails(20))
	}
	return out
}

func readItem(hc *http.Client, api, id string) (finalItem, error) {
	resp, err := hc.Get(api + "/v1/items/" + id)
	if err != nil {
		return finalItem{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return finalItem{}, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		it := finalItem{found: true}
		if err := json.Unmarshal(b, &it); err != nil {
			return finalItem{}, fmt.Errorf("item %s: %v: %s", id, err, b)
		}
		return it, nil
	case http.StatusNotFound:
		return finalItem{}, nil
	}
	return finalItem{}, fmt.Errorf("GET /v1/items/%s: %d: %s", id, resp.StatusCode, b)
}

func appendSummary(t *testing.T, line string) {
	path := os.Getenv(summaryEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("%s: %v", summaryEnv, err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// cannotRestartPostgres says why this machine's PostgreSQL cannot be
// restarted by the test, or "" when it can: it takes root and the Debian
// cluster tools.
func cannotRestartPostgres() string {
	if os.Geteuid() != 0 {
		return "not running as root"
	}
	if _, err := exec.LookPath("pg_ctlcluster"); err != nil {
		return "pg_ctlcluster is not installed"
	}
	if v, err := os.ReadDir("/etc/postgresql"); err != nil || len(v) == 0 {
		return "no cluster under /etc/postgresql"
	}
	return ""
}

// restartPostgres restarts the server under the workers' load and waits
// for every running daemon to answer from the store again by itself.
func restartPostgres(t *testing.T, c *cluster, hc *http.Client) {
	v, _ := os.ReadDir("/etc/postgresql")
	began := time.Now()
	out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", v[0].Name(), "main", "restart").CombinedOutput()
	if err != nil {
		t.Fatalf("pg_ctlcluster restart: %v\n%s", err, out)
	}
	restarted := time.Since(began)
	c.mu.Lock()
	var up []*daemon
	for _, d := range c.slots {
		if d != nil {
			up = append(up, d)
		}
	}
	c.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for _, d := range up {
		for {
			resp, err := hc.Get(d.api + "/v1/items/stats")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the daemon did not answer from the store within a minute of the PostgreSQL restart\n%s", d.tail(20))
			}
			// Nothing to wait on but the daemon itself: poll it.
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("PostgreSQL restarted in %v under load; the daemon answered from the store %v after the restart began",
		restarted.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}
