package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostguard/hostguard/store/sqlite"
)

func TestLockRefusesASecondHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	l, err := sqlite.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Lock(path)
	locked, ok := errors.AsType[*sqlite.LockedError](err)
	if !ok {
		t.Fatalf("second Lock: %v, want a *LockedError", err)
	}
	if locked.Path != path || locked.PID != os.Getpid() {
		t.Fatalf("refusal names %q pid %d, want %q pid %d", locked.Path, locked.PID, path, os.Getpid())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := sqlite.Lock(path)
	if err != nil {
		t.Fatalf("Lock after Release: %v", err)
	}
	l2.Release()
}
