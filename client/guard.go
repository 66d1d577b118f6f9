package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hostguard/hostguard/api"
)

// Guard is the daemon's connectivity guard: acquire a ticket before a
// request to an endpoint, report how it went after.
type Guard struct{ c *Client }

// Acquire takes a ticket for u's endpoint. An open endpoint is
// ErrFastFail, with the wait in RetryAfter: do not send the request.
// exempt takes a ticket that never waits for a trial (see
// guard.Guard.AcquireExempt).
func (g *Guard) Acquire(ctx context.Context, u string, exempt bool) (api.Ticket, error) {
	var res api.Ticket
	err := g.c.call(ctx, http.MethodPost, "/v1/guard/acquire", nil, api.AcquireRequest{URL: u, Exempt: exempt}, &res, routeAcquire)
	return res, err
}

// Report says how a ticket's request went: api.OutcomeAnswered,
// api.OutcomeFailed with a failure class (empty: timeout), or
// api.OutcomeInconclusive.
func (g *Guard) Report(ctx context.Context, ticket, outcome, errorClass string) (api.ReportResult, error) {
	var res api.ReportResult
	err := g.c.call(ctx, http.MethodPost, "/v1/guard/report", nil,
		api.ReportRequest{Ticket: ticket, Outcome: outcome, ErrorClass: errorClass}, &res, routePlain)
	return res, err
}

// Extend renews a ticket's lease, by the daemon's lease length, while its
// request still runs.
func (g *Guard) Extend(ctx context.Context, ticket string) (api.TicketExtension, error) {
	var res api.TicketExtension
	err := g.c.call(ctx, http.MethodPost, "/v1/guard/tickets/"+seg(ticket)+"/extend", nil, nil, &res, routePlain)
	return res, err
}

// Reset forgets the failures of u's endpoint. Only the origin counts.
func (g *Guard) Reset(ctx context.Context, u string) error {
	return g.c.call(ctx, http.MethodPost, "/v1/guard/reset", nil, api.ResetRequest{URL: u}, nil, routePlain)
}

// ResetAll clears every endpoint's cooldown and streak.
func (g *Guard) ResetAll(ctx context.Context) error {
	return g.c.call(ctx, http.MethodPost, "/v1/guard/reset-all", nil, nil, nil, routePlain)
}

// Endpoints lists the endpoints the guard knows, in endpoint order; a
// state (closed, open, half-open) keeps only those in it.
func (g *Guard) Endpoints(ctx context.Context, state string) ([]api.Endpoint, error) {
	var q url.Values
	if state != "" {
		q = url.Values{"state": {state}}
	}
	var res api.EndpointList
	err := g.c.call(ctx, http.MethodGet, "/v1/guard", q, nil, &res, routePlain)
	return res.Endpoints, err
}
