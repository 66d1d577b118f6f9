package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/client"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server"
	"github.com/hostguard/hostguard/store/sqlite"
)

// Example runs a daemon with a retry queue over a SQLite file, then works
// one item through it as a worker in another process would: add, claim,
// fail, and a late succeed on the spent lease, which the daemon refuses.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "hostguard-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hg.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	sched, err := retry.New(st, retry.Config{Jitter: -1})
	if err != nil {
		panic(err)
	}
	srv, err := server.New(server.Config{Token: "t0ken", Retry: sched, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	daemon := httptest.NewServer(srv.Handler())
	defer daemon.Close()

	c, err := client.New(client.Config{Addr: daemon.URL, Token: "t0ken"})
	if err != nil {
		panic(err)
	}
	if _, err := c.Items.Add(ctx, api.NewItem{ID: "report-42", Payload: []byte("q3")}); err != nil {
		panic(err)
	}
	leases, err := c.Items.Claim(ctx, client.ClaimParams{N: 1, Lease: time.Minute, Worker: "example"})
	if err != nil {
		panic(err)
	}
	l := leases[0]
	fmt.Printf("claimed %s (%s), attempt %d\n", l.ID, l.Payload, l.Attempt)

	it, err := c.Items.Fail(ctx, l, client.FailParams{Class: "timeout", Note: "upstream slow"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("after fail: %s, %d failure(s), last %s\n", it.State, it.Failures, it.LastClass)

	_, err = c.Items.Succeed(ctx, l)
	var e *client.Error
	if errors.As(err, &e) && errors.Is(err, client.ErrLeaseLost) {
		fmt.Printf("late succeed: %d %s, field %q\n", e.Status, e.Code, e.Field)
	}
	// Output:
	// claimed report-42 (q3), attempt 1
	// after fail: scheduled, 1 failure(s), last timeout
	// late succeed: 409 lease_lost, field "lease"
}
