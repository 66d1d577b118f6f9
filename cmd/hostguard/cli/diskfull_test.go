package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/internal/storeerr"
	"github.com/hostguard/hostguard/retry"
)

// tmpfs mounts a tmpfs of size on a fresh folder, or skips the test where
// mounting is not allowed (not root, no mount namespace).
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// TestDiskFullRecoversByItself fills a small disk with the SQLite store's
// writes under a steady load: writes fail as an outage and /readyz's check
// says the disk is full; once space comes back (a ballast file removed),
// writing resumes under the same load, in the same process.
func TestDiskFullRecoversByItself(t *testing.T) {
	dir := tmpfs(t, "24m")
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 12<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := hostguard.Open(ctx, filepath.Join(dir, "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check, err := readiness(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := retry.New(st, retry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Readers on recent snapshots all along, as a daemon has, keep a
	// PASSIVE checkpoint from restarting the WAL.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = sched.Get(ctx, fmt.Sprintf("item-%d", i%100+r))
			}
		})
	}
	defer func() { close(stop); readers.Wait() }()
	payload := []byte(`"` + strings.Repeat("x", 8<<10) + `"`)
	n := 0
	write := func() error {
		n++
		_, err := sched.Add(ctx, retry.NewItem{ID: fmt.Sprintf("item-%d", n), Payload: payload})
		return err
	}

	// A steady load beside: workers claiming and releasing the first
	// items, writes that change rows without growing the database.
	for range 10 {
		if err := write(); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ls, err := sched.Claim(ctx, retry.ClaimParams{N: 1, Lease: time.Minute, Worker: "load"})
				if err == nil && len(ls) == 1 {
					_ = sched.Release(ctx, ls[0].Ref())
				}
			}
		})
	}

	var full error
	for range 4000 { // 32 MiB of payloads: more than the disk holds
		if full = write(); full != nil {
			break
		}
	}
	if full == nil || !storeerr.Unavailable(full) {
		t.Fatalf("after %d writes on a 24 MiB disk: %v; want an outage", n, full)
	}
	if err := check(ctx); err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("readiness on a full disk: %v", err)
	}
	// The load goes on. A write may still fit now and then (a checkpoint
	// that restarted the WAL frees its pages for the next), but one that
	// fails must fail as an outage, never as a broken store.
	failed := 0
	for range 5 {
		if err := write(); err != nil {
			if !storeerr.Unavailable(err) {
				t.Fatalf("a write on a full disk: %v; want an outage", err)
			}
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("five writes in a row succeeded on a full disk")
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for write() != nil {
		if time.Now().After(deadline) {
			t.Fatal("writes did not resume within 20 s of space coming back")
		}
	}
	for i := range 50 {
		if err := write(); err != nil {
			t.Fatalf("write %d after recovery: %v", i, err)
		}
	}
	if err := check(ctx); err != nil {
		t.Fatalf("readiness after recovery: %v", err)
	}
}
