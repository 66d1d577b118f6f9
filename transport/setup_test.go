package transport_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/transport"
)

// Guard time is a fake clock; the transport's timers are real. Tests that
// need a timer to fire use the short timeouts, which keep the suite fast.
// Everything else uses the patient one, which a passing run never waits
// for, so a loaded machine cannot turn a slow answer into a timeout.
const (
	headerTimeout = 200 * time.Millisecond
	idleTimeout   = 200 * time.Millisecond
	patient       = 10 * time.Second
	openFor       = 30 * time.Second
)

// clockStart is where the fake guard clock starts; it moves only when a test
// advances it.
var clockStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// bundle is what most tests need: a guard on a fake clock, a real
// http.Transport whose dials are counted, and over them three clients: a
// patient one, one with the short header timeout and one with the short
// idle timeout.
type bundle struct {
	clock        *clocktest.Clock
	guard        *guard.Guard
	base         *http.Transport
	dials        *atomic.Int64
	tr           *transport.Transport // the patient client's
	client       *http.Client
	quickHeaders *http.Client
	quickBody    *http.Client
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{clock: clocktest.New(clockStart), dials: new(atomic.Int64)}
	b.guard = guard.New(guard.Config{OpenFor: openFor, Now: b.clock.Now})
	b.base = countingBase(t, b.dials)
	b.tr = b.transport(patient, patient)
	b.client = &http.Client{Transport: b.tr}
	b.quickHeaders = &http.Client{Transport: b.transport(headerTimeout, patient)}
	b.quickBody = &http.Client{Transport: b.transport(patient, idleTimeout)}
	return b
}

// transport returns a transport over the bundle's base and guard.
func (b *bundle) transport(header, idle time.Duration) *transport.Transport {
	return transport.New(transport.Config{
		Base:          b.base,
		Guard:         b.guard,
		HeaderTimeout: header,
		IdleTimeout:   idle,
	})
}

// countingBase returns an http.Transport that counts every dial it starts.
// The dial receives the unresolved host name, so a request that never
// reaches it did no DNS lookup either.
func countingBase(t *testing.T, dials *atomic.Int64) *http.Transport {
	t.Helper()
	var d net.Dialer
	base := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(base.CloseIdleConnections)
	return base
}

func fault(t *testing.T, h *faulthost.Host) *faulthost.Host {
	t.Helper()
	t.Cleanup(h.Close)
	return h
}

// get sends a GET through c with ctx; the response body, if any, is read
// whole and closed.
func get(t *testing.T, c *http.Client, ctx context.Context, url string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(c, req)
}

// do is get without t, for goroutines.
func do(c *http.Client, req *http.Request) (*http.Response, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// roundTripFunc turns a function into a base transport for tests that need
// a base doing something a real one cannot, such as panicking.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// receive returns the next value from ch, failing the test if none comes
// within the patient timeout rather than hanging the suite.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(patient)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("nothing received within %v", patient)
		panic("unreachable")
	}
}

// await waits, for at most the patient timeout, until h has seen n requests.
func await(t *testing.T, h *faulthost.Host, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patient)
	defer cancel()
	if err := h.Await(ctx, n); err != nil {
		t.Fatal(err)
	}
}
