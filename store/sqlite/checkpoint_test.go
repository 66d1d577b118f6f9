package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/sqlite"
)

// The writer's own automatic checkpoint waits for a WAL far larger than
// these writes make, so the database file grows only if the background
// checkpoints copy the WAL into it.
func TestCheckpointsRunBesideTheWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostguard.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	before := fileSize(t, path)
	s, err := retry.New(st, retry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 512)
	items := make([]retry.NewItem, 0, retry.MaxAdd)
	for i := range 2 * retry.MaxAdd {
		items = append(items, retry.NewItem{ID: fmt.Sprintf("item-%06d", i), Payload: payload})
		if len(items) == cap(items) {
			if _, err := s.Add(t.Context(), items...); err != nil {
				t.Fatal(err)
			}
			items = items[:0]
		}
	}
	written := fileSize(t, path+"-wal")
	if written < 4<<20 {
		t.Fatalf("the WAL holds %d bytes after the writes; want at least 4 MiB for the test to mean anything", written)
	}
	// The checkpoints run every 100 ms while writes come; allow a loaded
	// machine far more.
	deadline := time.Now().Add(20 * time.Second)
	for fileSize(t, path) < before+4<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes (from %d) with %d bytes in the WAL: nothing checkpointed it",
				fileSize(t, path), before, written)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
