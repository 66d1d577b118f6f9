package client_test

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/client"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server"
	"github.com/hostguard/hostguard/store/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const token = "s3cret-token"

// daemon serves a real Server over a fresh SQLite file on a loopback
// listener, with every capability but the feeds, and returns its address.
func daemon(t *testing.T, edit func(*server.Config)) string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hg.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	sched, err := retry.New(st, retry.Config{Jitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	bud, err := budget.New(st, budget.Config{Sources: []budget.Source{{Name: "idx", OwnerDailyLimit: budget.Int(30), Pace: budget.NoPace}}})
	if err != nil {
		t.Fatal(err)
	}
	book, err := evidence.New(st, evidence.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	tracker, err := health.New(st, health.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Token: token, Logger: log, Retry: sched, Budget: bud, Evidence: book, Health: tracker, FeedStore: st}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		book.Close()
		st.Close()
	})
	return "http://" + ln.Addr().String()
}

// connect returns a client of a fresh daemon.
func connect(t *testing.T, edit func(*server.Config)) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Addr: daemon(t, edit), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
