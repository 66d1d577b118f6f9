package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/inputerr"
	"github.com/hostguard/hostguard/internal/storeerr"
	"github.com/hostguard/hostguard/internal/strictjson"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server/internal/netpolicy"
)

// handlerFunc is the shape of every API handler: it writes its answer and
// returns nil, or returns an error and writes nothing. apiHandler writes
// every error answer, so a handler says what went wrong (its own
// *apiError, or a library's typed error as it came) and never how to
// answer it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// apiHandler adapts h to http.Handler: the one place that turns errors
// into error responses.
func (s *Server) apiHandler(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// writeError answers err. Nothing is written to a client that has gone
// away (its request's context ended): a budget wait it gave up on, an
// upstream request it no longer reads.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	gone := r.Context().Err() != nil
	e := s.errorFor(err)
	markDaemonAnswer(err, e)
	if gone {
		return
	}
	s.logFailure(err, e)
	writeAPIError(w, e)
}

// internalError is a failure of the daemon's own machinery (a store, most
// likely) while doing something; the client learns what, never the cause,
// whose text may carry details of a store or a path.
type internalError struct {
	doing string
	err   error
}

func (e *internalError) Error() string { return e.doing + ": " + e.err.Error() }
func (e *internalError) Unwrap() error { return e.err }

// failed wraps a library error with what the handler was doing. The typed
// errors inside it still decide the answer; a store that could not be
// reached becomes a 503 naming doing (see storeerr), anything else nothing
// recognises a 500 naming it.
func failed(doing string, err error) error { return &internalError{doing: doing, err: err} }

func doing(err error) string {
	if ie, ok := errors.AsType[*internalError](err); ok {
		return ie.doing
	}
	return "a request"
}

// upstreamError is a request that got no response from upstream.
type upstreamError struct{ err error }

func (e *upstreamError) Error() string { return "upstream: " + e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

// errorFor maps err onto the API's answer, by type only: never by its
// text, which belongs to the package that wrote it.
func (s *Server) errorFor(err error) *apiError {
	if e, ok := errors.AsType[*apiError](err); ok {
		return e
	}
	if e, ok := errors.AsType[*strictjson.Error](err); ok {
		return bodyError(e)
	}
	if e := guardAnswer(err); e != nil {
		return e
	}
	if e := retryAnswer(err); e != nil {
		return e
	}
	if e := s.budgetAnswer(err); e != nil {
		return e
	}
	if e := inputAnswer(err); e != nil {
		return e
	}
	if up, ok := errors.AsType[*upstreamError](err); ok {
		class := failure.Classify(up.err)
		status := http.StatusBadGateway
		if class == failure.Timeout {
			status = http.StatusGatewayTimeout
		}
		// The message names the class, never the error text, which may
		// repeat the URL with its query.
		msg := fmt.Sprintf("server: upstream failed (%s)", class)
		if class == failure.Timeout {
			// Renderers read "timeout" in a message as a slow host
			// to be walked past; the class field says it for machines.
			msg = "server: the upstream sent no answer in time"
		}
		return &apiError{Status: status, Class: class.String(), Message: msg}
	}
	if storeerr.Unavailable(err) {
		return outageAnswer(doing(err))
	}
	// Anything else is a bug, or a store refusing what it was asked for:
	// waiting would not change the answer, so it is not a 503.
	if ie, ok := errors.AsType[*internalError](err); ok {
		return &apiError{Status: http.StatusInternalServerError, Message: "server: internal error while " + ie.doing}
	}
	return &apiError{Status: http.StatusInternalServerError, Message: "server: internal error"}
}

// guardAnswer answers a fast-fail (503, naming the endpoint), a request
// that ended while it waited for the endpoint's trial (503 too), and a
// destination the policy refuses (403).
func guardAnswer(err error) *apiError {
	if open, ok := errors.AsType[*guard.OpenError](err); ok {
		return &apiError{Status: http.StatusServiceUnavailable, Endpoint: open.Endpoint, RetryAfter: open.RetryAfter,
			Message: fmt.Sprintf("server: endpoint %s is not answering; not contacted (fast-fail)", open.Endpoint)}
	}
	if gu, ok := errors.AsType[*guard.GaveUpError](err); ok {
		// Its client went away, or its Hostguard-Timeout ran out, while it
		// waited for the endpoint's trial: whoever still reads the answer
		// learns the endpoint was not contacted.
		return &apiError{Status: http.StatusServiceUnavailable, Endpoint: gu.Endpoint,
			Message: fmt.Sprintf("server: the request ended while it waited for the trial of %s; not contacted", gu.Endpoint)}
	}
	if pol, ok := errors.AsType[*failure.PolicyError](err); ok && errors.Is(pol, netpolicy.ErrLoop) {
		return &apiError{Status: http.StatusLoopDetected, Class: failure.Policy.String(), ProxyStatus: "proxy_loop_detected",
			Message: "server: refused: the destination is this daemon's own listener"}
	}
	if pol, ok := errors.AsType[*failure.PolicyError](err); ok {
		return &apiError{Status: http.StatusForbidden, Class: failure.Policy.String(),
			Message: "server: refused by the destination policy: " + pol.Reason + " (see --allow-private)"}
	}
	return nil
}

func retryAnswer(err error) *apiError {
	switch {
	case errors.Is(err, retry.ErrLeaseLost):
		return conflict("lease", "lease lost: the item was claimed again or settled another way; drop this work")
	case errors.Is(err, retry.ErrNotFound):
		return notFound("id", "no such item")
	}
	return nil
}

// budgetAnswer answers a refusal. Exhausted and paced admissions are 429
// with Retry-After, so a client that honours it comes back when the answer
// can change.
func (s *Server) budgetAnswer(err error) *apiError {
	if ex, ok := errors.AsType[*budget.ExhaustedError](err); ok {
		resets := ex.ResetAt.UTC()
		return &apiError{Status: http.StatusTooManyRequests, RetryAfter: ex.ResetAt.Sub(s.cfg.Now()),
			Reason: "exhausted", ResetsAt: &resets,
			Message: fmt.Sprintf("server: the %s allowance for %s is used up today (%d of %d); it resets at %s",
				ex.Allowance, ex.Kind, ex.Used, ex.Limit, ex.ResetAt.UTC().Format(time.RFC3339))}
	}
	if pe, ok := errors.AsType[*budget.PacedError](err); ok {
		return &apiError{Status: http.StatusTooManyRequests, RetryAfter: pe.RetryAfter, Reason: "paced",
			Message: "server: the source was asked too recently; come back after Retry-After or send \"wait\":true"}
	}
	switch {
	case errors.Is(err, budget.ErrPaused):
		return &apiError{Status: http.StatusServiceUnavailable, RetryAfter: time.Minute, Reason: "paused",
			Message: "server: background work is paused by the owner"}
	case errors.Is(err, budget.ErrDisabled):
		return &apiError{Status: http.StatusForbidden, Field: "kind",
			Message: "server: the allowance for this work is zero: it is disabled"}
	case errors.Is(err, budget.ErrUnknownSource):
		return notFound("source", "no source of that name is configured (see --budget-source)")
	case errors.Is(err, budget.ErrGrantNotFound):
		return notFound("id", "no such grant")
	case errors.Is(err, budget.ErrGrantClosed):
		return conflict("actual", "the grant was already settled with another figure")
	case errors.Is(err, budget.ErrGrantExpired):
		return conflict("id", "the grant's day is over; it stays charged in full")
	}
	return nil
}

// inputAnswer answers input a library package refused: 400, naming the
// field as the package names it (its snake_case name is the API's).
func inputAnswer(err error) *apiError {
	field, reason, ok := libraryInput(err)
	if !ok {
		return nil
	}
	if b, isBlamed := errors.AsType[*blamed](err); isBlamed && field == "" {
		field = b.field
	}
	if field == "" {
		return badRequest("", "%s", reason)
	}
	return badRequest(field, "%s: %s", field, reason)
}

// libraryInput finds the typed input error of a library package in err.
func libraryInput(err error) (field, reason string, ok bool) {
	if field, reason, ok := inputerr.Find(err); ok {
		return field, reason, true
	}
	// guard.Key's errors name no field of their own; the handler blames
	// the one that held the URL.
	if errors.Is(err, guard.ErrBadURL) {
		return "", innermost(err).Error(), true
	}
	return "", "", false
}

// blamed names the field of an input error whose package does not name it
// itself.
type blamed struct {
	field string
	err   error
}

func (e *blamed) Error() string { return e.err.Error() }
func (e *blamed) Unwrap() error { return e.err }

// innermost strips the server's own wrappers from err.
func innermost(err error) error {
	for {
		switch e := err.(type) {
		case *internalError:
			err = e.err
		case *blamed:
			err = e.err
		default:
			return err
		}
	}
}

func blame(field string, err error) error {
	if err == nil {
		return nil
	}
	return &blamed{field: field, err: err}
}
