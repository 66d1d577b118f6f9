package leader_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/sqlitetest"
	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func postgresStore(t *testing.T) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), storetest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestSingleNodeLeadsAtOnceAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	el, err := leader.New(sqlitetest.Open(t), leader.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if el.Leading() || el.Term() != 0 {
		t.Fatal("leading before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	entered := make(chan int64, 1)
	done := make(chan error, 1)
	go func() {
		done <- el.Run(ctx, func(ctx context.Context) error {
			term, _ := leader.TermFromContext(ctx)
			entered <- term
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	if term := <-entered; term != 1 || !el.Leading() || el.Term() != 1 {
		t.Fatalf("term %d, Leading %v, Term %d; want 1, true, 1", term, el.Leading(), el.Term())
	}
	if err := el.Run(ctx, func(context.Context) error { return nil }); err == nil || !strings.Contains(err.Error(), "already active") {
		t.Fatalf("second concurrent Run: %v; want an error", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v; want nil", err)
	}
	if el.Leading() || el.Term() != 0 {
		t.Fatal("still leading after Run returned")
	}
}

func TestRunReturnsWhenTheWorkEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		st   func(t *testing.T) leader.Store
	}{
		{"sqlite", func(t *testing.T) leader.Store { return sqlitetest.Open(t) }},
		{"postgres", func(t *testing.T) leader.Store { return postgresStore(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := tc.st(t)
			el, err := leader.New(st, leader.Config{Name: "job", LeaseFor: 500 * time.Millisecond, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			boom := errors.New("work failed")
			if err := el.Run(context.Background(), func(context.Context) error { return boom }); !errors.Is(err, boom) {
				t.Fatalf("Run = %v; want the work's error", err)
			}
			if el.Leading() {
				t.Fatal("leading after the work ended")
			}
			// The lease was given up, so a new node leads at once.
			l, err := el.Current(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if l.Node == el.NodeID() {
				t.Fatalf("lease %+v still names the finished node", l)
			}
			other, _ := leader.New(st, leader.Config{Name: "job", LeaseFor: 500 * time.Millisecond, Logger: quiet})
			var term int64
			if err := other.Run(context.Background(), func(ctx context.Context) error {
				term, _ = leader.TermFromContext(ctx)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if tc.name == "postgres" && term != 2 {
				t.Fatalf("second node's term %d; want 2", term)
			}
		})
	}
}

func TestRunWithoutWork(t *testing.T) {
	t.Parallel()
	el, _ := leader.New(sqlitetest.Open(t), leader.Config{Logger: quiet})
	if err := el.Run(context.Background(), nil); err == nil {
		t.Fatal("Run(nil) accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	if err := el.Run(ctx, func(context.Context) error { called = true; return nil }); err != nil || called {
		t.Fatalf("Run on a done context = %v, called %v; want nil without calling", err, called)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	tests := []struct {
		cfg  leader.Config
		want string
	}{
		{leader.Config{Name: " "}, "name"},
		{leader.Config{Name: "a\x00b"}, "name"},
		{leader.Config{NodeID: strings.Repeat("n", 201)}, "node_id"},
		{leader.Config{LeaseFor: -time.Second}, "lease"},
		{leader.Config{LeaseFor: time.Millisecond}, "lease"},
		{leader.Config{LeaseFor: time.Second, RenewEvery: 600 * time.Millisecond}, "renew_every"},
		{leader.Config{RenewEvery: -time.Second}, "renew_every"},
	}
	for _, tt := range tests {
		_, err := leader.New(st, tt.cfg)
		ie, ok := errors.AsType[*leader.InputError](err)
		if !ok || ie.Field != tt.want || !errors.Is(err, leader.ErrInvalid) || !strings.HasPrefix(err.Error(), "leader: "+tt.want+": ") {
			t.Errorf("New(%+v) = %v; want a leader.InputError for %s", tt.cfg, err, tt.want)
		}
	}
	if _, err := leader.New(nil, leader.Config{}); err == nil {
		t.Error("New(nil) accepted")
	}
	a, _ := leader.New(st, leader.Config{})
	b, _ := leader.New(st, leader.Config{})
	if a.NodeID() == "" || a.NodeID() == b.NodeID() {
		t.Errorf("default node ids %q and %q; want distinct, non-empty", a.NodeID(), b.NodeID())
	}
}
