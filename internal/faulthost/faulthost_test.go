package faulthost_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/faulthost"
)

// client returns a client whose idle connections are closed when the test
// ends, so goleak sees no transport goroutines left over.
func client(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport: tr,
		// The kit's tests look at the redirect itself, not its target.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func host(t *testing.T, h *faulthost.Host) *faulthost.Host {
	t.Helper()
	t.Cleanup(h.Close)
	return h
}

func get(t *testing.T, c *http.Client, ctx context.Context, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

func TestStatusAnswersEveryRequestOnOneConnection(t *testing.T) {
	t.Parallel()
	h := host(t, faulthost.Status(http.StatusBadGateway))
	c := client(t)
	for i := range 3 {
		resp, err := get(t, c, t.Context(), h.URL()+"/any/path")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("request %d body: %v", i, err)
		}
		if resp.StatusCode != http.StatusBadGateway || string(body) != "Bad Gateway\n" {
			t.Fatalf("request %d: got %d %q, want 502 %q", i, resp.StatusCode, body, "Bad Gateway\n")
		}
	}
	if got := h.Requests(); got != 3 {
		t.Errorf("Requests() = %d, want 3", got)
	}
	if got := h.Conns(); got != 1 {
		t.Errorf("Conns() = %d, want 1 (keep-alive)", got)
	}
}

func TestStatusRejectsInterimCodes(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Status(100) did not panic")
		}
	}()
	faulthost.Status(100).Close()
}

func TestNeverAnswersHoldsUntilClientGivesUp(t *testing.T) {
	t.Parallel()
	h := host(t, faulthost.NeverAnswers())
	ctx, cancel := context.WithCancel(t.Context())
	c := client(t)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Do(req)
		errc <- err
	}()
	if err := h.Await(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if got := h.Requests(); got != 1 {
		t.Errorf("Requests() = %d, want 1", got)
	}
}

func TestClosedPortRefuses(t *testing.T) {
	t.Parallel()
	h := host(t, faulthost.ClosedPort())
	_, err := get(t, client(t), t.Context(), h.URL())
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want ECONNREFUSED", err)
	}
	if h.Requests() != 0 || h.Conns() != 0 {
		t.Errorf("counts = %d requests, %d conns, want 0, 0", h.Requests(), h.Conns())
	}
}

func TestResetsAfterReadingRequest(t *testing.T) {
	t.Parallel()
	h := host(t, faulthost.Resets())
	_, err := get(t, client(t), t.Context(), h.URL())
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("got %v, want ECONNRESET", err)
	}
	if got := h.Requests(); got != 1 {
		t.Errorf("Requests() = %d, want 1", got)
	}
}

func TestStallsMidBodyDeliversPartThenNothing(t *testing.T) {
	t.Parallel()
	h := faulthost.StallsMidBody()
	defer h.Close()
	resp, err := get(t, client(t), t.Context(), h.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ContentLength != faulthost.StallDeclared {
		t.Errorf("ContentLength = %d, want %d", resp.ContentLength, faulthost.StallDeclared)
	}
	part := make([]byte, faulthost.StallSent)
	if _, err := io.ReadFull(resp.Body, part); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(part, faulthost.Body(faulthost.StallSent)) {
		t.Error("the delivered part is not the documented pattern")
	}
	// The rest never comes: closing the host ends the body short.
	h.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading past the stall: got %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestTrickleDeliversWholeBody(t *testing.T) {
	t.Parallel()
	const total = 50
	h := host(t, faulthost.Trickle(7, 2*time.Millisecond, total))
	resp, err := get(t, client(t), t.Context(), h.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, faulthost.Body(total)) {
		t.Fatalf("body = %q, want %q", body, faulthost.Body(total))
	}
}

func TestRedirectPointsAtTarget(t *testing.T) {
	t.Parallel()
	const to = "http://127.0.0.1:1/next"
	h := host(t, faulthost.Redirect(to))
	resp, err := get(t, client(t), t.Context(), h.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != to {
		t.Fatalf("got %d Location %q, want 302 %q", resp.StatusCode, resp.Header.Get("Location"), to)
	}
}

func TestGatedAnswersAfterRelease(t *testing.T) {
	t.Parallel()
	h := host(t, faulthost.Gated(http.StatusTeapot))
	type result struct {
		code int
		err  error
	}
	c := client(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, h.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		resp.Body.Close()
		done <- result{code: resp.StatusCode}
	}()
	if err := h.Await(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("answered before Release: %+v", r)
	default:
	}
	h.Release()
	h.Release() // harmless
	if r := <-done; r.err != nil || r.code != http.StatusTeapot {
		t.Fatalf("got %+v, want 418", r)
	}
}

func TestAwaitGivesUpWithContext(t *testing.T) {
	t.Parallel()
	h := host(t, faulthost.Status(http.StatusOK))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := h.Await(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestCloseEndsHeldConnections(t *testing.T) {
	t.Parallel()
	h := faulthost.NeverAnswers()
	c, err := net.Dial("tcp", h.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.Await(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	h.Close()
	h.Close() // idempotent
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after Close: %d, %v; want EOF", n, err)
	}
}
