package transport_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/transport"
)

func TestHeaderTimeoutIsHostLevelTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.NeverAnswers())
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, h.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = b.quickHeaders.Transport.RoundTrip(req)
	elapsed := time.Since(start)
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("got %v, want a net.Error timeout", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("%v: want a deadline in the chain and no cancellation", err)
	}
	if c := failure.Classify(err); !c.HostLevel() {
		t.Errorf("classified %v, want host-level", c)
	}
	if elapsed < headerTimeout {
		t.Errorf("gave up after %v, before the header timeout %v", elapsed, headerTimeout)
	}
}

// TestTrickleIsReadWhole runs alone, not in parallel: a goroutine starved
// for longer than the idle timeout is, to the timer, a stalled body.
func TestTrickleIsReadWhole(t *testing.T) {
	b := setup(t)
	// Each gap is a fiftieth of the idle timeout, to leave room for a
	// loaded machine; the whole body takes more than two idle timeouts.
	const idle = 500 * time.Millisecond
	const chunk, pieces = 100, 121
	h := fault(t, faulthost.Trickle(chunk, idle/50, chunk*pieces))
	start := time.Now()
	resp, body, err := get(t, &http.Client{Transport: b.transport(patient, idle)}, t.Context(), h.URL())
	if err != nil {
		t.Fatalf("got %v after %v, want the whole body", err, time.Since(start))
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, faulthost.Body(chunk*pieces)) {
		t.Fatalf("got %d and %d bytes, want 200 and the whole body", resp.StatusCode, len(body))
	}
	if total := time.Since(start); total < 2*idle {
		t.Errorf("transfer took %v; the test needs it well above the idle timeout %v", total, idle)
	}
}

func TestStalledBodyIsCutWithoutTripping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := fault(t, faulthost.StallsMidBody())
	// Should the cut never come, closing the host ends the read with a
	// different error instead of hanging the suite.
	safety := time.AfterFunc(20*idleTimeout, h.Close)
	defer safety.Stop()
	for i := 1; i <= 3; i++ {
		resp, err := b.quickBody.Get(h.URL())
		if err != nil {
			t.Fatal(err)
		}
		part := make([]byte, faulthost.StallSent)
		if _, err := io.ReadFull(resp.Body, part); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = resp.Body.Read(make([]byte, 1))
		waited := time.Since(start)
		resp.Body.Close()
		var netErr net.Error
		if !errors.As(err, &netErr) || !netErr.Timeout() {
			t.Fatalf("stall %d: got %v, want a timeout", i, err)
		}
		if waited < idleTimeout {
			t.Errorf("stall %d: cut after %v, before the idle timeout %v", i, waited, idleTimeout)
		}
		if got := b.guard.State(h.URL()); got != guard.Closed {
			t.Fatalf("stall %d: state = %v, want closed (the host answered)", i, got)
		}
		if got := h.Requests(); got != i {
			t.Fatalf("stall %d: host saw %d requests", i, got)
		}
	}
}

func TestPausingReaderIsNotCut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const total = 4096
	h := fault(t, faulthost.Trickle(total, 0, total))
	resp, err := b.quickBody.Get(h.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	// The caller, not the host, goes quiet: the bytes are already here.
	time.Sleep(2 * idleTimeout)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("after a pause between reads: %v", err)
	}
	if got := append(first, rest...); !bytes.Equal(got, faulthost.Body(total)) {
		t.Fatalf("got %d bytes, want the whole %d-byte body", len(got), total)
	}
}

// rwc is an upgraded connection's body: readable and writable.
type rwc struct{ io.ReadWriteCloser }

func TestBodiesWithNothingToWatchPassThrough(t *testing.T) {
	t.Parallel()
	upgraded := rwc{}
	cases := []struct {
		name string
		code int
		body io.ReadCloser
	}{
		{"no body", http.StatusNoContent, http.NoBody},
		// Callers type-assert a 101 body to io.ReadWriteCloser.
		{"switching protocols", http.StatusSwitchingProtocols, upgraded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: tc.code, Body: tc.body, Request: r}, nil
			})
			tr := transport.New(transport.Config{Base: base, Guard: guard.New(guard.Config{})})
			req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:9/", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Body != tc.body {
				t.Errorf("body is %T, want the base's %T unwrapped", resp.Body, tc.body)
			}
		})
	}
}
