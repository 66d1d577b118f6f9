package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestRetryNotifySpacing: writes that come while a NOTIFY's gap runs share
// one NOTIFY at its end, and none of them goes unannounced.
func TestRetryNotifySpacing(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Long enough that the writes below all fall inside it on a slow
	// machine; the default is a few milliseconds.
	const gap = 500 * time.Millisecond
	postgres.SetRetryNotifyGap(s, gap)
	sched, err := retry.New(s, retry.Config{})
	if err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var channel string
	if err := conn.QueryRow(ctx, `SELECT 'hostguard_retry.' || current_schema()`).Scan(&channel); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	// next waits up to limit for the next notification and says when it
	// came; ok is false when none came.
	next := func(limit time.Duration) (at time.Time, ok bool) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		if _, err := conn.WaitForNotification(c); err != nil {
			if errors.Is(c.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				return time.Time{}, false
			}
			t.Fatalf("waiting for a notification: %v", err)
		}
		return time.Now(), true
	}

	if _, err := sched.Add(ctx, retry.NewItem{ID: "first"}); err != nil {
		t.Fatal(err)
	}
	first, ok := next(10 * time.Second)
	if !ok {
		t.Fatal("a lone write was not announced")
	}
	for i := range 5 {
		if _, err := sched.Add(ctx, retry.NewItem{ID: fmt.Sprintf("burst-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	second, ok := next(10 * time.Second)
	if !ok {
		t.Fatal("writes made during the gap were never announced")
	}
	if d := second.Sub(first); d < gap/2 {
		t.Fatalf("the second NOTIFY came %v after the first; the gap is %v", d, gap)
	}
	if _, ok := next(gap + 500*time.Millisecond); ok {
		t.Fatal("the writes made during one gap were announced more than once")
	}
}
