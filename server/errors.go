package server

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/server/internal/proxystatus"
)

// apiError is every 4xx and 5xx answer of the API: its body is an
// api.ErrorBody (the fields below carry the same names and meanings), and
// the rest says how to send it. Clients branch on the status code and the
// field, never on the text.
//
// A handler returns an *apiError for a refusal the library packages cannot
// express; their own typed errors it returns as they are, and errorFor
// maps them.
type apiError struct {
	Status   int
	Message  string // the body's error
	Field    string
	Endpoint string
	FastFail bool // a guard refusal: the daemon did not contact the endpoint
	Class    string
	Reason   string
	ResetsAt *time.Time
	// RetryAfter is sent as Retry-After and retry_after_seconds, rounded
	// up to whole seconds; see writeAPIError.
	RetryAfter time.Duration
	// ProxyStatus is the error type of a Proxy-Status header (RFC 9209)
	// sent with the answer, "" for none.
	ProxyStatus string
	// psDetails is the Proxy-Status details parameter; it never holds a
	// path, query or credential.
	psDetails string
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
	body := api.ErrorBody{
		Error: e.Message, Field: e.Field, Endpoint: e.Endpoint, FastFail: e.FastFail,
		Class: e.Class, Reason: e.Reason, ResetsAt: e.ResetsAt,
	}
	if e.RetryAfter > 0 || e.Status == http.StatusServiceUnavailable {
		secs := retryAfterSeconds(e.RetryAfter)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		body.RetryAfterSeconds = &secs
	}
	if e.ProxyStatus != "" {
		w.Header().Set("Proxy-Status", proxystatus.Value(e.ProxyStatus, e.psDetails))
	}
	writeJSON(w, e.Status, body)
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
