package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/internal/storeerr"
)

// A write queued behind the one writer connection, which something else
// holds, gives up at the store's timeout, as an outage, having written
// nothing; the writes that follow the queue's release go through.
func TestWriteTimeoutInTheWriterQueue(t *testing.T) {
	ctx := context.Background()
	const timeout = 200 * time.Millisecond
	s, err := OpenConfig(ctx, filepath.Join(t.TempDir(), "h.db"), Config{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held, err := s.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	writes := []struct {
		what string
		do   func() error
	}{
		{"a transaction", func() error {
			return s.tx(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `DELETE FROM health_hosts`)
				return err
			})
		}},
		{"a health touch", func() error {
			_, err := s.HealthTouch(ctx, health.StoreTouchParams{Name: "h", Display: "h", Outcome: health.Success, Now: time.Now()})
			return err
		}},
		{"a health delete", func() error { _, err := s.HealthDelete(ctx, "h"); return err }},
	}
	for _, w := range writes {
		start := time.Now()
		err := w.do()
		took := time.Since(start)
		if !errors.Is(err, context.DeadlineExceeded) || !storeerr.Unavailable(err) {
			t.Fatalf("%s behind a held writer: %v; want the store's timeout, an outage", w.what, err)
		}
		if took > timeout+2*time.Second {
			t.Fatalf("%s gave up after %v; want about %v", w.what, took, timeout)
		}
	}
	held.Close()
	if _, ok, err := s.HealthGet(ctx, "h"); err != nil || ok {
		t.Fatalf("the touch that timed out left a record (%v, %v)", ok, err)
	}
	for _, w := range writes {
		if err := w.do(); err != nil {
			t.Fatalf("%s once the writer is free: %v", w.what, err)
		}
	}
}
