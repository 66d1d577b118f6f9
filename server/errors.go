package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// apiError is every 4xx and 5xx answer of the API. Its JSON form is
// {"error": "...", "field": "..."} plus, where they apply, the endpoint a
// fast-fail names, the seconds to wait and the failure class of an upstream
// error. Clients branch on the status code and the field, never on the text.
type apiError struct {
	Status     int           `json:"-"`
	Message    string        `json:"error"`
	Field      string        `json:"field,omitempty"`
	Endpoint   string        `json:"endpoint,omitempty"`
	Class      string        `json:"class,omitempty"`
	RetryAfter time.Duration `json:"-"`
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

// writeError answers with e. A non-apiError is an internal failure: its text
// may carry details of a store or a path, so the client gets a generic
// message and the caller is expected to have logged the cause.
func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{Status: http.StatusInternalServerError, Message: "server: internal error"}
	}
	if e.RetryAfter > 0 || e.Status == http.StatusServiceUnavailable {
		secs := retryAfterSeconds(e.RetryAfter)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		e.RetrySeconds = &secs
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

// decodeJSON reads one JSON object from the request body into dst. It
// refuses bodies over limit bytes, unknown fields, wrong types and trailing
// data, each with a message and, where one is to blame, the field.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) *apiError {
	return decode(w, r, limit, dst, false)
}

// decodeOptionalJSON is decodeJSON for routes whose body may be empty.
func decodeOptionalJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) *apiError {
	return decode(w, r, limit, dst, true)
}

func decode(w http.ResponseWriter, r *http.Request, limit int64, dst any, optional bool) *apiError {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) && optional {
			return nil
		}
		return jsonError(err, limit)
	}
	// A second value, or garbage after the object, usually means a client
	// concatenated two requests; silently using the first would hide that.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return jsonError(err, limit)
		}
		return badRequest("", "request body has data after the JSON object")
	}
	return nil
}

func jsonError(err error, limit int64) *apiError {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &mbe):
		return &apiError{Status: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("server: request body is larger than %d bytes", limit)}
	case errors.Is(err, io.EOF):
		return badRequest("", "request body is empty; want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "malformed JSON: the body ends before the object does")
	case errors.As(err, &syn):
		return badRequest("", "malformed JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("", "request body must be a JSON object, not %s", typ.Value)
		}
		return badRequest(typ.Field, "field %q must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	// encoding/json reports unknown fields only as text; this is the one
	// place the message is read, and it is our own decoder's.
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ := strconv.Unquote(f)
		if name == "" {
			name = f
		}
		return badRequest(name, "unknown field %q", name)
	}
	return badRequest("", "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "bool":
		return "true or false"
	case kind == "string":
		return "a string"
	case kind == "slice", kind == "array":
		return "an array"
	default:
		return "an object"
	}
}

// internalError logs a failure of the daemon's own machinery (a store, most
// likely) and answers 500 without its details.
func (s *Server) internalError(w http.ResponseWriter, doing string, err error) {
	s.log.Error("server: "+doing+" failed", "err", err)
	writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "server: internal error while " + doing})
}
