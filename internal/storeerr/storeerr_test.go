package storeerr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hostguard/hostguard/internal/storeerr"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/jackc/pgx/v5/pgconn"
)

type sqliteCode int

func (c sqliteCode) Error() string { return fmt.Sprintf("sqlite code %d", int(c)) }
func (c sqliteCode) Code() int     { return int(c) }

func TestUnavailable(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a bug", errors.New("index out of range"), false},
		{"timeout", fmt.Errorf("postgres: claim: %w", context.DeadlineExceeded), true},
		{"refused", fmt.Errorf("postgres: claim: %w", refused), true},
		{"pg admin shutdown", fmt.Errorf("postgres: claim: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"pg connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"pg serialization", &pgconn.PgError{Code: "40001"}, true},
		{"pg schema gone", fmt.Errorf("postgres: add: %w", &pgconn.PgError{Code: "42P01"}), true},
		{"pg syntax", &pgconn.PgError{Code: "42601"}, false},
		{"pg constraint", fmt.Errorf("postgres: add: %w", &pgconn.PgError{Code: "23505"}), false},
		{"pg out of range", &pgconn.PgError{Code: "22003"}, false},
		{"pg connection ended mid-message", fmt.Errorf("postgres: claim: failed to receive message: %w", io.ErrUnexpectedEOF), true},
		{"pg connection ended", fmt.Errorf("postgres: claim: %w", io.EOF), true},
		{"pg conn closed", fmt.Errorf("postgres: claim: %w", pgconn.ErrConnClosed), true},
		{"broken pipe", fmt.Errorf("postgres: claim: %w", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}), true},
		{"sqlite busy", fmt.Errorf("sqlite: add: %w", sqliteCode(5)), true},
		{"sqlite busy snapshot", sqliteCode(5 | 2<<8), true},
		{"sqlite constraint", sqliteCode(19), false},
	}
	for _, c := range cases {
		if got := storeerr.Unavailable(c.err); got != c.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestClosedSQLiteStore checks the case a daemon meets when its store was
// closed under it.
func TestClosedSQLiteStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SchemaVersion(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = st.SchemaVersion(ctx)
	if err == nil || !storeerr.Unavailable(err) {
		t.Fatalf("a closed store's error %v is not unavailable", err)
	}
}
