package server

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/server/internal/proxystatus"
)

// apiError is every 4xx and 5xx answer of the API. Its JSON form is
// {"error": "...", "field": "..."} plus, where they apply, the endpoint a
// fast-fail names, the seconds to wait and the failure class of an upstream
// error. Clients branch on the status code and the field, never on the text.
//
// A handler returns an *apiError for a refusal the library packages cannot
// express; their own typed errors it returns as they are, and errorFor
// maps them.
type apiError struct {
	Status   int    `json:"-"`
	Message  string `json:"error"`
	Field    string `json:"field,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// FastFail is true for a guard refusal: the daemon did not contact
	// the endpoint (see proxystatus.go).
	FastFail bool   `json:"fast_fail,omitempty"`
	Class    string `json:"class,omitempty"`
	// Reason says why the budget refused an admission: "exhausted" (the
	// day's allowance is used up; ResetsAt says when it comes back),
	// "paced" (asked too soon; Retry-After is the next slot) or "paused"
	// (the owner paused background work). Clients branch on it rather
	// than guess from Retry-After.
	Reason     string        `json:"reason,omitempty"`
	ResetsAt   *time.Time    `json:"resets_at,omitempty"`
	RetryAfter time.Duration `json:"-"`
	// ProxyStatus is the error type of a Proxy-Status header (RFC 9209)
	// sent with the answer, "" for none.
	ProxyStatus string `json:"-"`
	// psDetails is the Proxy-Status details parameter; it never holds a
	// path, query or credential.
	psDetails string
	// RetrySeconds mirrors the Retry-After header for clients that read only
	// the body; it is set whenever that header is.
	RetrySeconds *int64 `json:"retry_after_seconds,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// badRequest is the common case: the caller sent something wrong in field.
func badRequest(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Field: field, Message: "server: " + fmt.Sprintf(format, args...)}
}

func notFound(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Field: field, Message: "server: " + fmt.Sprintf(format, args...)}
}

func conflict(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Field: field, Message: "server: " + fmt.Sprintf(format, args...)}
}

// writeJSON writes v with status. Encoding errors cannot be reported to a
// client whose headers are already sent, so they are ignored here; every
// value passed in is a plain struct that always encodes.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

// writeAPIError writes e, with Retry-After where the client should come
// back later.
func writeAPIError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 || e.Status == http.StatusServiceUnavailable {
		secs := retryAfterSeconds(e.RetryAfter)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		e.RetrySeconds = &secs
	}
	if e.ProxyStatus != "" {
		w.Header().Set("Proxy-Status", proxystatus.Value(e.ProxyStatus, e.psDetails))
	}
	writeJSON(w, e.Status, e)
}

// retryAfterSeconds rounds up, and never says 0: a client told to retry
// after 0 seconds would spin, while the guard only wants it to come back
// once the trial that holds the endpoint has settled.
func retryAfterSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 1
	}
	return int64(math.Ceil(d.Seconds()))
}
