package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/api"
)

// Code says what kind of refusal an Error is. It is chosen from the
// status, the route and the fields of the daemon's answer, as the Python
// and TypeScript clients choose their error classes.
type Code string

// The codes of Error. A code's sentinel (ErrLeaseLost for CodeLeaseLost)
// matches it with errors.Is; some also match a broader one.
const (
	// CodeUnreachable: no answer came (Status 0).
	CodeUnreachable Code = "unreachable"
	// CodeBadRequest: 400, the daemon refused the input; Field names it.
	CodeBadRequest Code = "bad_request"
	// CodeTooLarge: 413, the body is over the daemon's limit. It is a
	// bad request too.
	CodeTooLarge Code = "too_large"
	// CodeUnauthorized: 401, a missing or wrong token.
	CodeUnauthorized Code = "unauthorized"
	// CodeNotFound: 404, an unknown item, ticket, host, grant, source,
	// feed or route.
	CodeNotFound Code = "not_found"
	// CodeConflict: 409, the request conflicts with what is stored.
	CodeConflict Code = "conflict"
	// CodeLeaseLost: 409 on a lease: another worker owns the item now,
	// drop the work. It is a conflict too.
	CodeLeaseLost Code = "lease_lost"
	// CodeFastFail: the endpoint is open; the daemon refused without any
	// network work. Endpoint names it, RetryAfter is the wait.
	CodeFastFail Code = "fast_fail"
	// CodeTooManyTickets: 429 from Acquire, the daemon holds as many
	// remote tickets as it allows.
	CodeTooManyTickets Code = "too_many_tickets"
	// CodeBudgetExhausted: 429 from Admit, the day's allowance is used
	// up; ResetsAt says when it comes back.
	CodeBudgetExhausted Code = "budget_exhausted"
	// CodeBudgetPaced: 429 from Admit, the source was asked too recently;
	// RetryAfter is the wait.
	CodeBudgetPaced Code = "budget_paced"
	// CodeBudgetPaused: 503 from Admit, the owner paused background work.
	CodeBudgetPaused Code = "budget_paused"
	// CodeBudgetDisabled: 403 from Admit, the allowance for this kind of
	// work is zero.
	CodeBudgetDisabled Code = "budget_disabled"
	// CodePolicyRefused: 403 from Fetch, the destination policy refused
	// the address (see the daemon's --allow-private).
	CodePolicyRefused Code = "policy_refused"
	// CodeUpstreamFailed: Fetch got no upstream answer (502, 504, or
	// another refusal naming a failure class); Body.Class is the class.
	CodeUpstreamFailed Code = "upstream_failed"
	// CodeNotConfigured: 501, the daemon runs without the capability the
	// route needs.
	CodeNotConfigured Code = "not_configured"
	// CodeOther: any other answer that is not a success.
	CodeOther Code = "error"
)

// The sentinels errors.Is matches an *Error against. ErrBudgetRefused
// matches every budget refusal, ErrConflict a lost lease too and
// ErrBadRequest a body over the limit too.
var (
	ErrUnreachable     = &Error{Code: CodeUnreachable}
	ErrBadRequest      = &Error{Code: CodeBadRequest}
	ErrTooLarge        = &Error{Code: CodeTooLarge}
	ErrUnauthorized    = &Error{Code: CodeUnauthorized}
	ErrNotFound        = &Error{Code: CodeNotFound}
	ErrConflict        = &Error{Code: CodeConflict}
	ErrLeaseLost       = &Error{Code: CodeLeaseLost}
	ErrFastFail        = &Error{Code: CodeFastFail}
	ErrTooManyTickets  = &Error{Code: CodeTooManyTickets}
	ErrBudgetRefused   = &Error{Code: codeBudget}
	ErrBudgetExhausted = &Error{Code: CodeBudgetExhausted}
	ErrBudgetPaced     = &Error{Code: CodeBudgetPaced}
	ErrBudgetPaused    = &Error{Code: CodeBudgetPaused}
	ErrBudgetDisabled  = &Error{Code: CodeBudgetDisabled}
	ErrNotConfigured   = &Error{Code: CodeNotConfigured}
	ErrPolicyRefused   = &Error{Code: CodePolicyRefused}
	ErrUpstreamFailed  = &Error{Code: CodeUpstreamFailed}
)

// codeBudget is the code of ErrBudgetRefused alone: no Error has it, every
// budget refusal matches it.
const codeBudget Code = "budget"

// parent is the broader code each code also matches.
var parent = map[Code]Code{
	CodeTooLarge:        CodeBadRequest,
	CodeLeaseLost:       CodeConflict,
	CodeBudgetExhausted: codeBudget,
	CodeBudgetPaced:     codeBudget,
	CodeBudgetPaused:    codeBudget,
	CodeBudgetDisabled:  codeBudget,
	CodePolicyRefused:   CodeUpstreamFailed,
}

// Error is an answer of the daemon that is not a success, or no answer.
type Error struct {
	// Status is the HTTP status; 0 when no answer came.
	Status int
	Code   Code
	// Message is the daemon's text, for people: branch on Code and Field.
	Message string
	// Field is the input the daemon blamed, as its JSON spells it
	// (lease_seconds, items[3].id); empty when none.
	Field string
	// RetryAfter is how long to wait before asking again, from the
	// Retry-After header (or the body's retry_after_seconds); 0 when the
	// daemon did not say.
	RetryAfter time.Duration
	// Body is the decoded error object: the endpoint of a fast-fail, the
	// reason and resets_at of a budget refusal.
	Body api.ErrorBody
	// ProxyError is the RFC 9209 error type the daemon named in its
	// Proxy-Status header (destination_unavailable, connection_timeout,
	// ...); set by Fetch.
	ProxyError string
	// Header is the answer's header.
	Header http.Header
	err    error
}

func (e *Error) Error() string {
	msg := e.Message
	switch {
	case e.err != nil:
		msg = "client: the daemon did not answer: " + e.err.Error()
	case msg == "":
		msg = fmt.Sprintf("client: the daemon answered %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return msg
}

// Unwrap returns the transport's error of an unreachable daemon.
func (e *Error) Unwrap() error { return e.err }

// Is matches the sentinels: target's code is e's or a broader one.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Status != 0 || t.Message != "" {
		return false
	}
	return t.Code == e.Code || t.Code == parent[e.Code]
}

// route names the kind of call, because some statuses mean different
// things on different routes.
type route int

const (
	routePlain route = iota
	routeAcquire
	routeLease
	routeBudget
	routeFetch
)

// errorFrom builds the Error of one answer that is not a success.
func errorFrom(resp *http.Response, raw []byte, rt route, now time.Time) *Error {
	e := &Error{Status: resp.StatusCode, Header: resp.Header}
	_ = json.Unmarshal(raw, &e.Body)
	e.Message, e.Field = e.Body.Error, e.Body.Field
	e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), e.Body.RetryAfterSeconds, now)
	e.Code = code(e.Status, e.Body, rt)
	return e
}

func code(status int, b api.ErrorBody, rt route) Code {
	switch {
	case b.FastFail || status == http.StatusServiceUnavailable && b.Endpoint != "":
		return CodeFastFail
	case rt == routeBudget && status == http.StatusServiceUnavailable && b.Reason == "paused":
		return CodeBudgetPaused
	case rt == routeBudget && status == http.StatusForbidden:
		return CodeBudgetDisabled
	case rt == routeBudget && status == http.StatusTooManyRequests && b.Reason == "exhausted":
		return CodeBudgetExhausted
	case rt == routeBudget && status == http.StatusTooManyRequests:
		// Without a reason nothing is guessed: honouring Retry-After is
		// right either way.
		return CodeBudgetPaced
	case rt == routeAcquire && status == http.StatusTooManyRequests:
		return CodeTooManyTickets
	case rt == routeLease && status == http.StatusConflict && b.Field == "lease":
		return CodeLeaseLost
	case rt == routeFetch && status == http.StatusForbidden && b.Class == "policy":
		return CodePolicyRefused
	case rt == routeFetch && (status == http.StatusBadGateway || status == http.StatusGatewayTimeout || b.Class != ""):
		return CodeUpstreamFailed
	}
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusNotImplemented:
		return CodeNotConfigured
	}
	return CodeOther
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date,
// and falls back on the body's mirror of it.
func retryAfter(h string, body *int64, now time.Time) time.Duration {
	if h != "" {
		if n, err := strconv.ParseInt(h, 10, 64); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
		if t, err := http.ParseTime(h); err == nil {
			return max(0, t.Sub(now))
		}
	}
	if body != nil && *body > 0 {
		return time.Duration(*body) * time.Second
	}
	return 0
}
