package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/client"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/server"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestRunReportsHowTheRequestWent(t *testing.T) {
	c := connect(t, func(cfg *server.Config) { cfg.Guard = guard.Config{Threshold: 1} })
	ctx := context.Background()
	const u = "http://files.example/a"
	state := func() string {
		eps, err := c.Guard.Endpoints(ctx, "")
		if err != nil || len(eps) != 1 {
			t.Fatalf("Endpoints: %+v, %v", eps, err)
		}
		return eps[0].State
	}

	if err := c.Guard.Run(ctx, u, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Run of an answered request: %v", err)
	}
	// An error that proves nothing about the host leaves it closed.
	odd := errors.New("the caller's own mistake")
	if err := c.Guard.Run(ctx, u, func(context.Context) error { return odd }); err != odd {
		t.Fatalf("Run passes fn's error on: got %v", err)
	}
	if st := state(); st != "closed" {
		t.Fatalf("after an inconclusive request the endpoint is %s", st)
	}
	// A refused connection is evidence: with a threshold of one it opens
	// the endpoint, and the next Run fails fast without calling fn.
	refused := func(ctx context.Context) error {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", closedPort(t))
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := c.Guard.Run(ctx, u, refused); err == nil {
		t.Fatal("Run of a refused connection: no error")
	}
	if st := state(); st != "open" {
		t.Fatalf("after a refused connection the endpoint is %s", st)
	}
	called := false
	err := c.Guard.Run(ctx, u, func(context.Context) error { called = true; return nil })
	if !errors.Is(err, client.ErrFastFail) || called {
		t.Fatalf("Run of an open endpoint: %v, fn called %v", err, called)
	}
}

// extendSpy passes requests on and says when one renews a ticket.
type extendSpy struct {
	next    http.RoundTripper
	renewed chan struct{}
}

func (s *extendSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusOK && strings.HasSuffix(r.URL.Path, "/extend") {
		select {
		case s.renewed <- struct{}{}:
		default:
		}
	}
	return resp, err
}

func TestRunKeepsTheTicketWhileTheRequestRuns(t *testing.T) {
	addr := daemon(t, func(cfg *server.Config) { cfg.TicketLease = 300 * time.Millisecond })
	spy := &extendSpy{next: http.DefaultTransport, renewed: make(chan struct{}, 1)}
	c, err := client.New(client.Config{Addr: addr, Token: token, HTTPClient: &http.Client{Transport: spy}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The request outlives its lease; it ends once Run renewed the
	// ticket, and the report still finds the ticket.
	err = c.Guard.Run(ctx, "http://slow.example/", func(ctx context.Context) error {
		for range 4 {
			select {
			case <-spy.renewed:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run of a request that outlived its lease: %v", err)
	}
}
