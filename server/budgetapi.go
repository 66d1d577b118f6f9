package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hostguard/hostguard/budget"
)

func (s *Server) needBudget(w http.ResponseWriter) bool {
	if s.cfg.Budget == nil {
		writeError(w, &apiError{Status: http.StatusNotImplemented, Message: "server: this daemon has no admission budget configured"})
		return false
	}
	return true
}

type admitRequest struct {
	Source string `json:"source"`
	Kind   string `json:"kind"`
	Cost   int64  `json:"cost"`
	// Wait asks for the source's next pacing slot instead of a refusal
	// when the source was asked too recently; the answer comes when the
	// slot does.
	Wait bool `json:"wait"`
}

// budgetResult labels the admissions metric: granted, or why not.
func budgetResult(err error) string {
	switch {
	case err == nil:
		return "granted"
	case errors.Is(err, budget.ErrExhausted):
		return "exhausted"
	case errors.Is(err, budget.ErrPaced):
		return "paced"
	case errors.Is(err, budget.ErrPaused):
		return "paused"
	case errors.Is(err, budget.ErrDisabled):
		return "disabled"
	case errors.Is(err, budget.ErrUnknownSource):
		return "unknown_source"
	}
	return "error"
}

func (s *Server) budgetAdmit(w http.ResponseWriter, r *http.Request) {
	if !s.needBudget(w) {
		return
	}
	var req admitRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Kind == "" {
		writeError(w, badRequest("kind", "kind is missing; want one of %s", kindNames()))
		return
	}
	kind, err := budget.ParseKind(req.Kind)
	if err != nil {
		writeError(w, badRequest("kind", "unknown kind %q; want one of %s", req.Kind, kindNames()))
		return
	}
	if req.Cost < 0 {
		writeError(w, badRequest("cost", "cost must not be negative"))
		return
	}
	p := budget.AdmitParams{Source: req.Source, Kind: kind, Cost: req.Cost}
	var g budget.Grant
	if req.Wait {
		g, err = s.cfg.Budget.Wait(r.Context(), p)
	} else {
		g, err = s.cfg.Budget.Admit(r.Context(), p)
	}
	result := budgetResult(err)
	s.metrics.admissions.WithLabelValues(string(kind), result).Inc()
	if err != nil {
		s.budgetError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, g)
}

// budgetError answers a refusal. Exhausted and paced admissions are 429
// with Retry-After, so a client that honours it comes back when the answer
// can change.
func (s *Server) budgetError(w http.ResponseWriter, r *http.Request, err error) {
	var ex *budget.ExhaustedError
	var pe *budget.PacedError
	switch {
	case errors.As(err, &ex):
		writeError(w, &apiError{Status: http.StatusTooManyRequests, RetryAfter: ex.ResetAt.Sub(s.cfg.Now()),
			Message: fmt.Sprintf("server: the %s allowance for %s is used up today (%d of %d); it resets at %s",
				ex.Allowance, ex.Kind, ex.Used, ex.Limit, ex.ResetAt.UTC().Format(time.RFC3339))})
	case errors.As(err, &pe):
		writeError(w, &apiError{Status: http.StatusTooManyRequests, RetryAfter: pe.RetryAfter,
			Message: "server: the source was asked too recently; come back after Retry-After or send \"wait\":true"})
	case errors.Is(err, budget.ErrPaused):
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, RetryAfter: time.Minute,
			Message: "server: background work is paused by the owner"})
	case errors.Is(err, budget.ErrDisabled):
		writeError(w, &apiError{Status: http.StatusForbidden, Field: "kind",
			Message: "server: the allowance for this work is zero: it is disabled"})
	case errors.Is(err, budget.ErrUnknownSource):
		writeError(w, notFound("source", "no source of that name is configured (see --budget-source)"))
	case errors.Is(err, budget.ErrGrantNotFound):
		writeError(w, notFound("id", "no such grant"))
	case errors.Is(err, budget.ErrGrantClosed):
		writeError(w, &apiError{Status: http.StatusConflict, Field: "actual",
			Message: "server: the grant was already settled with another figure"})
	case errors.Is(err, budget.ErrGrantExpired):
		writeError(w, &apiError{Status: http.StatusConflict, Field: "id",
			Message: "server: the grant's day is over; it stays charged in full"})
	case r.Context().Err() != nil:
		// The client left while waiting for its slot; the admission was
		// undone by the budget.
	default:
		if msg := err.Error(); strings.HasPrefix(msg, "budget: ") && !strings.Contains(msg, "store") {
			writeError(w, badRequest("", "%s", strings.TrimPrefix(msg, "budget: ")))
			return
		}
		s.internalError(w, "admitting a request", err)
	}
}

func kindNames() string {
	names := make([]string, len(budget.Kinds))
	for i, k := range budget.Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

type settleRequest struct {
	Actual *int64 `json:"actual"`
}

type settleResponse struct {
	ID     string `json:"id"`
	Actual int64  `json:"actual"`
}

func (s *Server) budgetSettle(w http.ResponseWriter, r *http.Request) {
	if !s.needBudget(w) {
		return
	}
	id := r.PathValue("id")
	if !budget.ValidGrantID(id) {
		writeError(w, badRequest("id", "not a grant id"))
		return
	}
	var req settleRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Actual == nil {
		writeError(w, badRequest("actual", "actual is missing: the bytes the transfer really used"))
		return
	}
	if *req.Actual < 0 {
		writeError(w, badRequest("actual", "actual must not be negative"))
		return
	}
	if err := s.cfg.Budget.Settle(r.Context(), id, *req.Actual); err != nil {
		s.budgetError(w, r, err)
		return
	}
	s.metrics.settlements.Inc()
	writeJSON(w, http.StatusOK, settleResponse{ID: id, Actual: *req.Actual})
}

func (s *Server) budgetReport(w http.ResponseWriter, r *http.Request) {
	if !s.needBudget(w) {
		return
	}
	rep, err := s.cfg.Budget.Report(r.Context())
	if err != nil {
		s.internalError(w, "reading the budget", err)
		return
	}
	writeJSON(w, http.StatusOK, newBudgetView(rep))
}

// budgetView is budget.Report as the API shows it: durations in seconds,
// like every other duration of the API, rather than Go's nanoseconds.
type budgetView struct {
	budget.Report
	Sources []sourceView `json:"sources"`
}

type sourceView struct {
	budget.SourceReport
	// These hide the nanosecond fields of the same JSON names.
	HidePollInterval    *int    `json:"poll_interval,omitempty"`
	HidePace            *int    `json:"pace,omitempty"`
	PollIntervalSeconds float64 `json:"poll_interval_seconds"`
	PaceSeconds         float64 `json:"pace_seconds"`
}

func newBudgetView(r budget.Report) *budgetView {
	v := &budgetView{Report: r, Sources: make([]sourceView, 0, len(r.Sources))}
	for _, s := range r.Sources {
		v.Sources = append(v.Sources, sourceView{SourceReport: s,
			PollIntervalSeconds: s.PollInterval.Seconds(), PaceSeconds: s.Pace.Seconds()})
	}
	return v
}
