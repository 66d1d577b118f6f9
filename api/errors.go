package api

import "time"

// ErrorBody is every 4xx and 5xx answer the daemon makes itself:
// {"error": "...", "field": "..."} plus, where they apply, the endpoint a
// fast-fail names, the seconds to wait, the failure class of an upstream
// error and why the budget refused. Branch on the status and the fields,
// never on Error, which is for people.
type ErrorBody struct {
	Error    string `json:"error"`
	Field    string `json:"field,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// FastFail is true for a guard refusal: the daemon did not contact
	// the endpoint.
	FastFail bool   `json:"fast_fail,omitempty"`
	Class    string `json:"class,omitempty"`
	// Reason says why the budget refused an admission: "exhausted" (the
	// day's allowance is used up; ResetsAt says when it comes back),
	// "paced" (asked too soon; Retry-After is the next slot) or "paused"
	// (the owner paused background work).
	Reason   string     `json:"reason,omitempty"`
	ResetsAt *time.Time `json:"resets_at,omitempty"`
	// RetryAfterSeconds mirrors the Retry-After header for clients that
	// read only the body; it is set whenever that header is.
	RetryAfterSeconds *int64 `json:"retry_after_seconds,omitempty"`
}
