package transport_test

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/transport"
)

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// seenRequest is what a test server saw of one probe.
type seenRequest struct {
	method, path, cookie, auth string
	body                       int
}

// recording returns a server answering every request with code and the
// requests it saw.
func recording(t *testing.T, code int) (*httptest.Server, func() []seenRequest) {
	t.Helper()
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, seenRequest{r.Method, r.URL.RequestURI(), r.Header.Get("Cookie"), r.Header.Get("Authorization"), len(b)})
		mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenRequest(nil), seen...)
	}
}

func TestProbeFuncOverSockets(t *testing.T) {
	t.Parallel()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	// Only the dead host waits for the timeout; everything else gets the
	// patient one, so a slow handshake on a loaded machine stays what it is.
	probe := transport.ProbeFunc(base, patient)

	for _, code := range []int{http.StatusNotFound, http.StatusServiceUnavailable, http.StatusOK, http.StatusFound} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			t.Parallel()
			srv, seen := recording(t, code)
			if err := probe(t.Context(), srv.URL); err != nil {
				t.Fatalf("a %d is an answer; got %v", code, err)
			}
			want := []seenRequest{{method: http.MethodHead, path: "/"}}
			if got := seen(); len(got) != 1 || got[0] != want[0] {
				t.Errorf("server saw %+v, want one bare HEAD /", got)
			}
		})
	}
	t.Run("dead", func(t *testing.T) {
		t.Parallel()
		h := fault(t, faulthost.NeverAnswers())
		start := time.Now()
		err := transport.ProbeFunc(base, headerTimeout)(t.Context(), h.URL())
		if c := failure.Classify(err); !c.HostLevel() || c != failure.Timeout {
			t.Fatalf("got %v (%v); want a host-level timeout", err, c)
		}
		if took := time.Since(start); took < headerTimeout {
			t.Errorf("gave up after %v, before the timeout", took)
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		h := fault(t, faulthost.ClosedPort())
		err := probe(t.Context(), h.URL())
		if c := failure.Classify(err); c != failure.Refused {
			t.Fatalf("got %v (%v); want refused", err, c)
		}
	})
	t.Run("TLS error", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake error it logs is the point
		srv.StartTLS()
		t.Cleanup(srv.Close)
		err := probe(t.Context(), srv.URL) // base does not trust the test certificate
		if c := failure.Classify(err); c != failure.TLS || c.HostLevel() {
			t.Fatalf("got %v (%v); want an inconclusive TLS failure", err, c)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		h := fault(t, faulthost.NeverAnswers())
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- transport.ProbeFunc(base, patient)(ctx, h.URL()) }()
		await(t, h, 1)
		cancel()
		if err := receive(t, done); !errors.Is(err, context.Canceled) || failure.Classify(err) != failure.Canceled {
			t.Fatalf("got %v; want the context's cancellation, which is inconclusive", err)
		}
	})
}

// TestProbeFuncSkipsTheGuard hands ProbeFunc a guarded transport whose
// guard holds the endpoint open: the probe must still reach the host.
func TestProbeFuncSkipsTheGuard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, seen := recording(t, http.StatusOK)
	for range guard.DefaultThreshold {
		tk, err := b.guard.Acquire(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		tk.Failed(context.DeadlineExceeded)
	}
	if err := transport.ProbeFunc(b.tr, patient)(t.Context(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if len(seen()) != 1 {
		t.Fatalf("host saw %d requests", len(seen()))
	}
}

func TestProbeFuncRejectsNegativeTimeout(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "negative") {
			t.Errorf("recovered %v", r)
		}
	}()
	transport.ProbeFunc(nil, -time.Second)
}

// TestTransportProbes checks Config.Probe on the transport's own guard in
// a bubble, over an in-memory base: after two refused requests and one
// refused by the guard, the guard sends one HEAD when the open period
// ends, and the answer closes the endpoint.
func TestTransportProbes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var heads, gets int
		up := false
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			if r.Method == http.MethodHead {
				heads++
			} else {
				gets++
			}
			if !up {
				return nil, errRefused
			}
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
		})
		tr := transport.New(transport.Config{Base: base, Probe: true, Logger: discard()})
		defer tr.Close()
		c := &http.Client{Transport: tr}
		const u = "http://down.test/feed"
		for range 2 {
			if _, err := c.Get(u); err == nil || errors.Is(err, guard.ErrOpen) {
				t.Fatalf("got %v; want the refusal", err)
			}
		}
		if _, err := c.Get(u); !errors.Is(err, guard.ErrOpen) {
			t.Fatalf("got %v; want a fast-fail", err)
		}
		mu.Lock()
		up = true
		mu.Unlock()
		time.Sleep(guard.DefaultOpenFor)
		synctest.Wait()
		if st := tr.Guard().State(u); st != guard.Closed {
			t.Fatalf("after the probe: %s", st)
		}
		mu.Lock()
		defer mu.Unlock()
		if heads != 1 || gets != 2 {
			t.Errorf("base saw %d HEAD and %d GET; want 1 and 2", heads, gets)
		}
	})
}

// TestTimeoutsOfAHostThatCameBackAreChecked: a host seen answering hangs
// for two requests in a row, and is back by the time the second one's
// header timeout trips it. The guard checks it with one HEAD at once, and
// the answer closes the endpoint: the next request goes out instead of
// being refused for a whole open period.
func TestTimeoutsOfAHostThatCameBackAreChecked(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var heads, gets int
		hang := false
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			if r.Method == http.MethodHead {
				heads++
			} else {
				gets++
			}
			hung := hang && r.Method != http.MethodHead
			mu.Unlock()
			if hung {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			time.Sleep(20 * time.Millisecond) // what an answer takes
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
		})
		tr := transport.New(transport.Config{Base: base, Probe: true, Logger: discard()})
		defer tr.Close()
		c := &http.Client{Transport: tr}
		const u = "http://flapping.test/feed"
		get := func() error {
			resp, err := c.Get(u)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		if err := get(); err != nil {
			t.Fatalf("the host answering: %v", err)
		}
		mu.Lock()
		hang = true
		mu.Unlock()
		if err := get(); err == nil || errors.Is(err, guard.ErrOpen) {
			t.Fatalf("the first hanging request: %v; want its header timeout", err)
		}
		second := make(chan error, 1)
		go func() { second <- get() }()
		synctest.Wait()
		// Back, while the second request still hangs.
		mu.Lock()
		hang = false
		mu.Unlock()
		if err := <-second; err == nil || errors.Is(err, guard.ErrOpen) {
			t.Fatalf("the second hanging request: %v; want its header timeout", err)
		}
		// The check's HEAD takes what an answer takes.
		time.Sleep(time.Second)
		synctest.Wait()
		if st := tr.Guard().State(u); st != guard.Closed {
			t.Fatalf("after the check: %s; want closed", st)
		}
		if err := get(); err != nil {
			t.Fatalf("the next request: %v; want it sent", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if heads != 1 || gets != 4 {
			t.Errorf("base saw %d HEAD and %d GET; want 1 and 4", heads, gets)
		}
	})
}
