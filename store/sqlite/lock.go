package sqlite

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SQLite's own locks guard single transactions, not a daemon's tenure: two
// daemons on one file would both elect themselves (an SQLite store always
// leads) and both run the leader's work. So a daemon holds a lock of its
// own on a file beside the database for as long as it runs, and a second
// one is refused at start-up instead of sharing the file.
//
// The lock is an flock on PATH.lock, which the kernel releases when the
// holder exits however it exits, so a crash never leaves a stale lock.
// The file is never removed: removing it while another process waits on
// it would let a third lock a new file of the same name. It holds the
// holder's process id, for the refusal to name.

// LockSuffix is appended to the database path to name its lock file.
const LockSuffix = ".lock"

// FileLock is a held lock on one database file. Release it when done.
type FileLock struct {
	f *os.File
}

// LockedError is returned by Lock when another process holds the lock.
type LockedError struct {
	Path string // the database file
	PID  int    // the holder's process id, 0 if it could not be read
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = "another process (pid " + strconv.Itoa(e.PID) + ")"
	}
	return fmt.Sprintf("sqlite: %s is in use by %s; an SQLite file serves one daemon at a time: stop the other or use another file (daemons that share state share a PostgreSQL database)", e.Path, holder)
}

// Lock takes the daemon lock on the database at path, without waiting: it
// fails at once with a *LockedError if another process holds it.
func Lock(path string) (*FileLock, error) {
	f, err := os.OpenFile(path+LockSuffix, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	if held {
		pid := readPID(f)
		f.Close()
		return nil, &LockedError{Path: path, PID: pid}
	}
	// The holder's id is written only under the lock, so a reader that
	// found the lock held reads the holder's, or nothing while it writes.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &FileLock{f: f}, nil
}

func readPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		return 0
	}
	return pid
}

// Release frees the lock. The file stays (see above).
func (l *FileLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
