package fleet

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

func get(t *testing.T, h *Host, timeout time.Duration) (int, error) {
	t.Helper()
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(h.URL() + "/x")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func start(t *testing.T, spec HostSpec) *Host {
	t.Helper()
	h, err := StartHost(spec, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}

func TestHostModes(t *testing.T) {
	t.Parallel()
	h := start(t, HostSpec{Kind: Flapping, Status: http.StatusBadGateway})
	if code, err := get(t, h, time.Second); err != nil || code != http.StatusBadGateway {
		t.Fatalf("up host: status %d, err %v; want 502", code, err)
	}

	h.refuse()
	_, err := get(t, h, time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("refusing host: err %v, want connection refused", err)
	}

	h.up()
	if code, err := get(t, h, time.Second); err != nil || code != http.StatusBadGateway {
		t.Fatalf("host back up on its port: status %d, err %v", code, err)
	}

	h.mode.Store(modeHang)
	before := h.Reached()
	_, err = get(t, h, 100*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("hanging host: err %v, want a client timeout", err)
	}
	if h.Reached() != before+1 {
		t.Fatalf("hanging host reached %d times, want the request to arrive once", h.Reached()-before)
	}
}

func TestHostOutageFromStart(t *testing.T) {
	t.Parallel()
	dead := start(t, HostSpec{Kind: Dead, Schedule: Schedule{{From: 0, To: Forever, Hang: true}}})
	refused := start(t, HostSpec{Kind: Refused, Schedule: Schedule{{From: 0, To: Forever}}})
	if _, err := get(t, refused, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("refused host: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, dead.URL(), nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("dead host answered %d", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dead host: %v, want the caller's deadline", err)
	}
}

func TestHostLatency(t *testing.T) {
	t.Parallel()
	h := start(t, HostSpec{Kind: Slow, Latency: 150 * time.Millisecond})
	if _, err := get(t, h, 50*time.Millisecond); err == nil {
		t.Fatal("a host slower than the client's timeout answered in time")
	}
	if code, err := get(t, h, 5*time.Second); err != nil || code != http.StatusOK {
		t.Fatalf("slow host within a long timeout: %d, %v", code, err)
	}
}
