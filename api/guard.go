package api

import "time"

// AcquireRequest is the body of POST /v1/guard/acquire.
type AcquireRequest struct {
	URL    string `json:"url"`
	Exempt bool   `json:"exempt,omitempty"`
}

// Ticket answers POST /v1/guard/acquire: a ticket to report on with
// POST /v1/guard/report.
type Ticket struct {
	Ticket       string    `json:"ticket"`
	Endpoint     string    `json:"endpoint"`
	Trial        bool      `json:"trial"`
	Exempt       bool      `json:"exempt"`
	ExpiresAt    time.Time `json:"expires_at"`
	LeaseSeconds float64   `json:"lease_seconds"`
	// Extend is the path that renews the lease; a holder whose request
	// outlives lease_seconds must call it, or the ticket is released as
	// inconclusive when the lease runs out.
	Extend string `json:"extend"`
}

// TicketExtension answers POST /v1/guard/tickets/{id}/extend.
type TicketExtension struct {
	Ticket       string    `json:"ticket"`
	Endpoint     string    `json:"endpoint"`
	ExpiresAt    time.Time `json:"expires_at"`
	LeaseSeconds float64   `json:"lease_seconds"`
}

// The outcomes a ReportRequest may carry.
const (
	OutcomeAnswered     = "answered"
	OutcomeFailed       = "failed"
	OutcomeInconclusive = "inconclusive"
)

// ReportRequest is the body of POST /v1/guard/report. ErrorClass goes with
// OutcomeFailed only; empty there means a timeout.
type ReportRequest struct {
	Ticket     string `json:"ticket"`
	Outcome    string `json:"outcome"`
	ErrorClass string `json:"error_class,omitempty"`
}

// ReportResult answers POST /v1/guard/report: the endpoint's state after
// the report.
type ReportResult struct {
	Endpoint string `json:"endpoint"`
	State    string `json:"state"`
}

// ResetRequest is the body of POST /v1/guard/reset.
type ResetRequest struct {
	URL string `json:"url"`
}

// Endpoint is one endpoint of GET /v1/guard.
type Endpoint struct {
	Endpoint          string    `json:"endpoint"`
	State             string    `json:"state"`
	Failures          int       `json:"failures"`
	RetryAfterSeconds float64   `json:"retry_after_seconds"`
	OpenUntil         time.Time `json:"open_until,omitzero"`
	TicketsOut        int       `json:"tickets_out"`
	TrialOut          bool      `json:"trial_out"`
	LastFailure       string    `json:"last_failure,omitempty"`
	LastFailureAt     time.Time `json:"last_failure_at,omitzero"`
}

// EndpointList answers GET /v1/guard, in endpoint order.
type EndpointList struct {
	Endpoints []Endpoint `json:"endpoints"`
}
