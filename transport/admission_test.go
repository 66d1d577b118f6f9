package transport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/sqlitetest"
	"github.com/hostguard/hostguard/transport"
)

// upstream is a server on 127.0.0.1 that counts the connections it
// accepts and the requests it gets: a request that reached neither did no
// network work.
type upstream struct {
	srv      *httptest.Server
	conns    atomic.Int64
	mu       sync.Mutex
	arrivals []time.Time
}

const bigBody = 100_000

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.arrivals = append(u.arrivals, time.Now())
		u.mu.Unlock()
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/big", http.StatusFound)
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", bigBody)))
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
	u.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	u.srv.Start()
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) requests() []time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]time.Time(nil), u.arrivals...)
}

// admitted is a budget with one source and a transport admitting through
// it, over a base without keep-alives so that every request that goes out
// is a connection.
type admitted struct {
	b      *budget.Budget
	guard  *guard.Guard
	client *http.Client
}

func newAdmitted(t *testing.T, src budget.Source) *admitted {
	t.Helper()
	b, err := budget.New(sqlitetest.Open(t), budget.Config{Sources: []budget.Source{src}})
	if err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(base.CloseIdleConnections)
	g := guard.New(guard.Config{})
	t.Cleanup(func() { g.Close() })
	tr := transport.New(transport.Config{Base: base, Guard: g, Budget: b, HeaderTimeout: patient, IdleTimeout: patient})
	return &admitted{b: b, guard: g, client: &http.Client{Transport: tr}}
}

// openGuard trips origin's breaker open with refused connections, as a
// dead host would.
func openGuard(t *testing.T, g *guard.Guard, origin string) {
	t.Helper()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for range guard.DefaultThreshold {
		tk, err := g.Acquire(origin)
		if err != nil {
			t.Fatal(err)
		}
		tk.Failed(refused)
	}
	if _, err := g.Acquire(origin); !errors.Is(err, guard.ErrOpen) {
		t.Fatalf("the guard did not open: %v", err)
	}
}

func (a *admitted) get(ctx context.Context, url string, p budget.AdmitParams) (*http.Response, error) {
	req, err := http.NewRequestWithContext(transport.WithAdmission(ctx, p), http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return a.client.Do(req)
}

func (a *admitted) report(t *testing.T) budget.Report {
	t.Helper()
	r, err := a.b.Report(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func used(r budget.Report, source string) int64 {
	for _, s := range r.Sources {
		if s.Name == source {
			return s.Used
		}
	}
	return -1
}

func bytesUsed(r budget.Report) int64 {
	for _, k := range r.Kinds {
		if k.Kind == budget.KindBytes {
			return k.Used
		}
	}
	return -1
}

// twoPolls makes a source that allows two requests a day (10 %
// of 20) without pacing.
var twoPolls = budget.Source{Name: "idx", OwnerDailyLimit: budget.Int(20), Pace: -1}

func TestAdmissionRefusesAnExhaustedDayWithoutNetworkWork(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	a := newAdmitted(t, twoPolls)
	poll := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	for i := range 2 {
		resp, err := a.get(t.Context(), u.srv.URL+"/small", poll)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
	}
	// The guard holds the endpoint open: were it asked first, the answer
	// would be a fast-fail. The budget is asked first, and refuses.
	openGuard(t, a.guard, u.srv.URL)
	start := time.Now()
	_, err := a.get(t.Context(), u.srv.URL+"/small", poll)
	var ex *budget.ExhaustedError
	if !errors.Is(err, budget.ErrExhausted) || !errors.As(err, &ex) || errors.Is(err, guard.ErrOpen) {
		t.Fatalf("third request: %v; want the budget's refusal", err)
	}
	if time.Since(start) > patient/2 {
		t.Fatal("the refusal waited; an exhausted day is refused at once")
	}
	// http.Client quotes the URL around it; the transport's own error
	// names the endpoint alone.
	var ue *url.Error
	if !errors.As(err, &ue) || strings.Contains(ue.Err.Error(), "/small") || !strings.Contains(ue.Err.Error(), u.srv.URL) {
		t.Fatalf("the refusal should name the endpoint and not the path: %v", err)
	}
	if n := u.conns.Load(); n != 2 {
		t.Fatalf("upstream saw %d connections; want 2, none for the refused request", n)
	}
	if n := used(a.report(t), "idx"); n != 2 {
		t.Fatalf("source used %d; want 2", n)
	}
}

func TestAdmissionComesBeforeTheGuard(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	a := newAdmitted(t, budget.Source{Name: "idx", Pace: -1})
	openGuard(t, a.guard, u.srv.URL)
	_, err := a.get(t.Context(), u.srv.URL+"/small", budget.AdmitParams{Source: "idx", Kind: budget.KindSearch})
	if !errors.Is(err, guard.ErrOpen) {
		t.Fatalf("admitted request to an open endpoint: %v; want the guard's fast-fail", err)
	}
	if n := u.conns.Load(); n != 0 {
		t.Fatalf("upstream saw %d connections", n)
	}
	if n := used(a.report(t), "idx"); n != 1 {
		t.Fatalf("source used %d; the admission comes before the guard", n)
	}
}

func TestAdmissionWaitsForPacing(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	const pace = 300 * time.Millisecond
	a := newAdmitted(t, budget.Source{Name: "idx", Pace: pace})
	search := budget.AdmitParams{Source: "idx", Kind: budget.KindSearch}
	start := time.Now()
	for range 2 {
		resp, err := a.get(t.Context(), u.srv.URL+"/small", search)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	arr := u.requests()
	if len(arr) != 2 || arr[1].Sub(start) < pace {
		t.Fatalf("arrivals %v after %v; want the second at least %v after the first admission", arr, start, pace)
	}
	// A deadline before the next slot: refused at once, nothing sent.
	ctx, cancel := context.WithTimeout(t.Context(), pace/3)
	defer cancel()
	_, err := a.get(ctx, u.srv.URL+"/small", search)
	if !errors.Is(err, budget.ErrPaced) {
		t.Fatalf("request with a short deadline: %v; want ErrPaced", err)
	}
	if n := u.conns.Load(); n != 2 {
		t.Fatalf("upstream saw %d connections; want 2", n)
	}
}

func TestBytesReservationSettlesToWhatWasRead(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	a := newAdmitted(t, budget.Source{Name: "idx", Pace: -1})
	grab := budget.AdmitParams{Source: "idx", Kind: budget.KindBytes, Cost: 50_000}

	// Read 1000 bytes of a large body, then close: 1000 are charged.
	resp, err := a.get(t.Context(), u.srv.URL+"/big", grab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if n := bytesUsed(a.report(t)); n != 50_000 {
		t.Fatalf("bytes used %d while the body is open; want the reservation", n)
	}
	resp.Body.Close()
	if n := bytesUsed(a.report(t)); n != 1000 {
		t.Fatalf("bytes used %d after close; want 1000", n)
	}

	// A request that fails gives the reservation back.
	dead := faulthost.ClosedPort()
	defer dead.Close()
	if _, err := a.get(t.Context(), dead.URL()+"/big", grab); err == nil {
		t.Fatal("want an error from a closed port")
	}
	if n := bytesUsed(a.report(t)); n != 1000 {
		t.Fatalf("bytes used %d after a failed request; want the 1000 of before", n)
	}

	// Through a redirect: one reservation, settled to the final body.
	resp, err = a.get(t.Context(), u.srv.URL+"/redirect", grab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := a.report(t)
	if n := bytesUsed(r); n < 1000+bigBody || n > 1000+bigBody+200 {
		t.Fatalf("bytes used %d; want about %d (the redirect's own short body counts too)", n, 1000+bigBody)
	}
	if n := len(u.requests()); n != 3 {
		t.Fatalf("upstream got %d requests; want 3", n)
	}
}

func TestRedirectHopsAreOneAdmission(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	a := newAdmitted(t, twoPolls)
	resp, err := a.get(t.Context(), u.srv.URL+"/redirect", budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := used(a.report(t), "idx"); n != 1 {
		t.Fatalf("a redirected request used %d admissions; want 1", n)
	}
}

func TestWithoutBudgetAdmissionIsIgnored(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := transport.New(transport.Config{Base: base})
	defer tr.Close()
	req, _ := http.NewRequestWithContext(transport.WithAdmission(t.Context(), budget.AdmitParams{Source: "x", Kind: budget.KindHeadPoll}),
		http.MethodGet, u.srv.URL+"/small", nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p, ok := transport.AdmissionFrom(req.Context()); !ok || p.Source != "x" {
		t.Fatalf("AdmissionFrom = %+v, %v", p, ok)
	}
}
