package retry_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/storetest"
	_ "modernc.org/sqlite"
)

// killHelperEnv carries the store DSN to the child process of TestKillNine.
const killHelperEnv = "HOSTGUARD_RETRY_KILL_HELPER_DSN"

// TestHelperProcess is not a test: TestKillNine runs the test binary again
// with only this function selected, as a worker to be killed.
func TestHelperProcess(t *testing.T) {
	dsn := os.Getenv(killHelperEnv)
	if dsn == "" {
		return
	}
	if err := killWorker(dsn); err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// killWorker claims and settles items until it is killed. It reports each
// settlement on stdout only after the store confirmed it, so that the
// parent knows which results must have survived. It gives up by itself
// after a minute in case the parent died.
func killWorker(dsn string) error {
	ctx := context.Background()
	st, err := hostguard.Open(ctx, dsn)
	if err != nil {
		return err
	}
	s, err := retry.New(st, retry.Config{})
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ls, err := s.Claim(ctx, retry.ClaimParams{N: 5, Lease: time.Minute, Worker: "doomed"})
		if err != nil {
			return err
		}
		if len(ls) == 0 {
			fmt.Println("empty")
			continue
		}
		for _, l := range ls {
			switch k := rng.IntN(10); {
			case k < 5:
				if err := s.Succeed(ctx, l.Ref()); err != nil {
					return err
				}
				fmt.Println("ok", l.ID)
			case k < 8:
				if err := s.Fail(ctx, l.Ref(), "timeout", "killed worker"); err != nil {
					return err
				}
				fmt.Println("failed", l.ID)
			default:
				fmt.Println("held", l.ID) // never settled: the lease must expire
			}
		}
	}
	return errors.New("never killed")
}

func TestKillNine(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "hostguard.db")
		testKillNine(t, path, func() {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var res string
			if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
				t.Errorf("integrity_check after kill -9: %q, %v", res, err)
			}
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testKillNine(t, storetest.PostgresDSN(t), func() {})
	})
}

func testKillNine(t *testing.T, dsn string, extraChecks func()) {
	const items = 2000
	ctx := context.Background()
	st, err := hostguard.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	s, err := retry.New(st, retry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	all := make([]retry.NewItem, items)
	for i := range all {
		all[i] = retry.NewItem{ID: fmt.Sprintf("%040x", i*7919), Priority: i % 3}
	}
	if _, err := s.Add(ctx, all...); err != nil {
		t.Fatal(err)
	}
	st.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), killHelperEnv+"="+dsn)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	reported := map[string]string{} // id -> what the worker confirmed last
	lines := bufio.NewScanner(out)
	oks := 0
	deadline := time.AfterFunc(45*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for oks < 150 && lines.Scan() {
		verb, id, _ := strings.Cut(lines.Text(), " ")
		switch verb {
		case "ok", "failed", "held":
			reported[id] = verb
			if verb == "ok" {
				oks++
			}
		case "error":
			t.Fatalf("worker: %s", id)
		}
	}
	// Mid-stream: the worker is between or inside transactions.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() { // lines written before the kill
		if verb, id, ok := strings.Cut(lines.Text(), " "); ok && verb != "error" {
			reported[id] = verb
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("worker ended with %v before it was killed (reported %d results)", err, len(reported))
	}
	if oks < 150 {
		t.Fatalf("worker confirmed only %d successes in 45s", oks)
	}
	extraChecks()

	// Restart ten minutes later by the fake clock: every one-minute lease
	// has run out, no failure's wait (at least 27 minutes) has.
	later := time.Now().Add(10 * time.Minute)
	st, err = hostguard.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err = retry.New(st, retry.Config{Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, n := range stats.ByState {
		sum += n
	}
	if stats.Total != items || sum != items {
		t.Fatalf("after kill -9: %d items, states add up to %d; want %d: %+v", stats.Total, sum, items, stats)
	}
	leased := map[string]bool{}
	for _, it := range all {
		got, err := s.Get(ctx, it.ID)
		if err != nil {
			t.Fatalf("%s lost: %v", it.ID, err)
		}
		if !got.State.Valid() {
			t.Fatalf("%s in no valid state: %+v", it.ID, got)
		}
		switch reported[it.ID] {
		case "ok":
			if got.State != retry.Done {
				t.Errorf("%s: success was confirmed but the item is %v", it.ID, got.State)
			}
		case "failed":
			if got.State != retry.Scheduled || got.Failures != 1 || got.LastClass != "timeout" {
				t.Errorf("%s: failure was confirmed but the item is %+v", it.ID, got)
			}
		case "held":
			if got.State != retry.Leased {
				t.Errorf("%s: held by the dead worker but %v", it.ID, got.State)
			}
		}
		if got.State == retry.Leased {
			leased[it.ID] = true
		}
	}
	if len(leased) == 0 {
		t.Fatal("the dead worker held no lease: the test did not exercise expiry")
	}
	// The dead worker's leases have run out: they are claimed again.
	for {
		ls, err := s.Claim(ctx, retry.ClaimParams{N: retry.MaxClaim, Lease: time.Minute, Worker: "heir"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			break
		}
		for _, l := range ls {
			delete(leased, l.ID)
		}
	}
	if len(leased) > 0 {
		t.Fatalf("%d leases of the dead worker were never claimed again", len(leased))
	}
	t.Logf("worker confirmed %d results (%d successes) before kill -9; all %d items accounted for", len(reported), oks, items)
}
