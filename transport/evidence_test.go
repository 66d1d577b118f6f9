package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/transport"
)

// TestClientTimeoutTripsAtTheSecondGiveUp is the library's new user:
// http.Client{Timeout: 2 * time.Second} over the transport with its
// defaults, against a host that accepts and never answers. The client's
// timeout reaches the transport as a cancellation racing the deadline;
// it is the caller's deadline, so the second one opens the endpoint, and
// the third request fails fast without a connection.
func TestClientTimeoutTripsAtTheSecondGiveUp(t *testing.T) {
	t.Parallel()
	h := fault(t, faulthost.NeverAnswers())
	tr := transport.New(transport.Config{Logger: discard()})
	t.Cleanup(func() { tr.Close(); tr.CloseIdleConnections() })
	c := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	for i := 1; i <= 2; i++ {
		resp, err := c.Get(h.URL() + "/live")
		if err == nil {
			resp.Body.Close()
			t.Fatalf("request %d answered %d", i, resp.StatusCode)
		}
		var ne net.Error
		if errors.Is(err, guard.ErrOpen) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("request %d: %v; want the client's timeout", i, err)
		}
	}
	if st := tr.Guard().State(h.URL()); st != guard.Open {
		t.Fatalf("after two 2 s timeouts the endpoint is %v; want open", st)
	}
	began := time.Now()
	_, err := c.Get(h.URL() + "/live")
	if !errors.Is(err, guard.ErrOpen) {
		t.Fatalf("third request: %v; want a fast-fail", err)
	}
	if el := time.Since(began); el > time.Second {
		t.Errorf("the fast-fail took %v", el)
	}
	if n := h.Conns(); n != 2 {
		t.Fatalf("the host accepted %d connections; want 2, none for the fast-fail", n)
	}
}

// TestTinyDeadlinesTripNothing: however often a caller asks for a wait
// shorter than the floor, its give-ups say nothing about the host.
func TestTinyDeadlinesTripNothing(t *testing.T) {
	t.Parallel()
	h := fault(t, faulthost.NeverAnswers())
	g := guard.New(guard.Config{Disabled: func() bool { return false }})
	tr := transport.New(transport.Config{Guard: g})
	t.Cleanup(tr.CloseIdleConnections)
	for i := range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL(), nil)
		_, err := tr.RoundTrip(req)
		cancel()
		if err == nil || errors.Is(err, guard.ErrOpen) {
			t.Fatalf("request %d: %v; want the caller's deadline", i, err)
		}
	}
	for _, e := range g.Endpoints() {
		if e.Failures != 0 || e.State != guard.Closed {
			t.Fatalf("1 ms deadlines counted: %+v", e)
		}
	}
}

// TestCallersDeadlineAboveTheFloorCounts: a context deadline (not
// http.Client's timer) past the floor is a give-up that counts, and the
// error the caller gets still says deadline.
func TestCallersDeadlineAboveTheFloorCounts(t *testing.T) {
	t.Parallel()
	h := fault(t, faulthost.NeverAnswers())
	g := guard.New(guard.Config{WaitFloor: 100 * time.Millisecond, Disabled: func() bool { return false }})
	tr := transport.New(transport.Config{Guard: g})
	t.Cleanup(tr.CloseIdleConnections)
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL(), nil)
		_, err := tr.RoundTrip(req)
		cancel()
		var we *guard.WaitError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) || we.Owed < 200*time.Millisecond {
			t.Fatalf("request %d: %v; want a deadline, owed about 300ms", i, err)
		}
	}
	if st := g.State(h.URL()); st != guard.Open {
		t.Fatalf("after two 300 ms deadlines: %v; want open", st)
	}
}

// slowBody is an upload that takes its time: each Read waits a tick.
type slowBody struct {
	left int
	tick <-chan time.Time
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	<-b.tick
	b.left--
	p[0] = 'x'
	return 1, nil
}

// TestUploadIsNotCharged: sending the request body is the caller's time.
// An upload that takes several header timeouts still gets its answer,
// and the header timeout starts only once the host has the whole request.
func TestUploadIsNotCharged(t *testing.T) {
	t.Parallel()
	const header = 200 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	t.Cleanup(srv.Close)
	g := guard.New(guard.Config{Disabled: func() bool { return false }})
	tr := transport.New(transport.Config{Guard: g, HeaderTimeout: header})
	t.Cleanup(tr.CloseIdleConnections)
	tick := time.NewTicker(header / 2)
	defer tick.Stop()
	// Ten ticks of header/2: the upload takes five header timeouts.
	req, _ := http.NewRequest(http.MethodPost, srv.URL, &slowBody{left: 10, tick: tick.C})
	req.ContentLength = 10
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("a slow upload: %v; want the host's answer", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "10" {
		t.Fatalf("host read %q bytes; want 10", b)
	}
	if st := g.State(srv.URL); st != guard.Closed {
		t.Fatalf("endpoint %v after a slow upload; want closed", st)
	}
}
