package transport

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/hostguard/hostguard/budget"
)

// Budget admits the requests whose context carries an admission (see
// WithAdmission); *budget.Budget implements it.
type Budget interface {
	// Wait admits p, waiting for the source's pacing slot but never for
	// an exhausted allowance, which it refuses at once.
	Wait(ctx context.Context, p budget.AdmitParams) (budget.Grant, error)
	// Settle closes a bytes reservation at the figure actually used.
	Settle(ctx context.Context, id string, actual int64) error
}

// admissionKey carries the AdmitParams of WithAdmission. Its zero size
// means storing and looking it up does not allocate.
type admissionKey struct{}

// WithAdmission returns a copy of ctx under which a request is admitted by
// Config.Budget before the guard is asked and before any network work:
// RoundTrip waits for the source's pacing slot, and an exhausted, paused or
// zero allowance refuses the request with the budget's error (it wraps
// budget.ErrExhausted for an exhausted day) and no network work at all.
//
// A budget.KindBytes admission reserves p.Cost bytes; the reservation is
// settled to the body bytes actually read, counted over the redirects the
// client follows, when the final response's body is closed, and released
// when the request fails. (A redirect response the client does not follow
// leaves it charged in full, the safe side of a budget.)
//
// One context is one request: the redirect hops an http.Client makes for it
// are not admitted again. A Transport without a Budget admits nothing.
//
// The name lives here rather than in budget because it is a transport hint,
// like Exempt: it says how the transport should treat the request, and a
// budget user who never sends HTTP requests has no use for it.
func WithAdmission(ctx context.Context, p budget.AdmitParams) context.Context {
	return context.WithValue(ctx, admissionKey{}, p)
}

// AdmissionFrom returns the admission ctx carries, if any.
func AdmissionFrom(ctx context.Context) (budget.AdmitParams, bool) {
	p, ok := ctx.Value(admissionKey{}).(budget.AdmitParams)
	return p, ok
}

// admission is one admitted request: its bytes reservation, if any, and
// the body bytes read for it over all its hops.
type admission struct {
	b   Budget
	log *slog.Logger
	ctx context.Context // the first hop's, for settling after it ended

	mu      sync.Mutex
	grantID string // "" unless a bytes reservation is open
	read    int64
}

// admit admits req when its context carries an admission and t has a
// budget. A redirect hop (req.Response set by http.Client) belongs to the
// admission of the hop before it, found through that response's body.
func (t *Transport) admit(req *http.Request) (*admission, error) {
	if t.budget == nil || req.URL == nil {
		return nil, nil
	}
	if req.Response != nil {
		if prev, ok := req.Response.Body.(*admittedBody); ok {
			return prev.adm, nil
		}
		return nil, nil
	}
	ctx := req.Context()
	p, ok := AdmissionFrom(ctx)
	if !ok {
		return nil, nil
	}
	g, err := t.budget.Wait(ctx, p)
	if err != nil {
		// Keep the budget's error (errors.As finds *budget.ExhaustedError
		// and its reset time); name the endpoint, never the URL.
		return nil, fmt.Errorf("transport: %s://%s: not admitted: %w", req.URL.Scheme, req.URL.Host, err)
	}
	return &admission{b: t.budget, log: t.logger, ctx: ctx, grantID: g.ID}, nil
}

// failed settles the reservation to what was read so far (nothing, unless
// an earlier hop had a body): the request failed.
func (a *admission) failed() {
	if a != nil {
		a.settle()
	}
}

// answered counts resp's body for the admission, settling it when the
// final response's body is closed; a response without a body settles at
// once. Redirect responses keep it open for the next hop.
func (a *admission) answered(resp *http.Response) {
	if a == nil {
		return
	}
	redirect := resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != ""
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols:
		// A two-way stream callers type-assert: left alone, and its
		// reservation stays charged in full.
	case redirect:
		// The body, even an empty one, carries the admission to the next
		// hop (http.Client hands this response to it as req.Response).
		rc := resp.Body
		if rc == nil {
			rc = http.NoBody
		}
		resp.Body = &admittedBody{rc: rc, adm: a}
	case resp.Body == nil || resp.Body == http.NoBody:
		a.settle()
	default:
		resp.Body = &admittedBody{rc: resp.Body, adm: a, final: true}
	}
}

func (a *admission) settle() {
	a.mu.Lock()
	id, n := a.grantID, a.read
	a.grantID = ""
	a.mu.Unlock()
	if id == "" {
		return
	}
	// The request's context may be over; the settlement must still reach
	// the store.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), 10*time.Second)
	defer cancel()
	if err := a.b.Settle(ctx, id, n); err != nil {
		a.log.Warn("transport: settling a bytes reservation failed; it stays charged in full", "grant", id, "err", err)
	}
}

// admittedBody counts the bytes read from a response body for its
// admission.
type admittedBody struct {
	rc    io.ReadCloser
	adm   *admission
	final bool // closing it settles the admission
	once  sync.Once
}

func (b *admittedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.adm.mu.Lock()
		b.adm.read += int64(n)
		b.adm.mu.Unlock()
	}
	return n, err
}

func (b *admittedBody) Close() error {
	err := b.rc.Close()
	if b.final {
		b.once.Do(b.adm.settle)
	}
	return err
}
