package server

import (
	"errors"
	"net/http"

	"github.com/hostguard/hostguard/budget"
)

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

func (s *Server) budgetAdmit(w http.ResponseWriter, r *http.Request) error {
	var req admitRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	kind, err := budget.ParseKind(req.Kind)
	if err != nil {
		return err
	}
	p := budget.AdmitParams{Source: req.Source, Kind: kind, Cost: req.Cost}
	var g budget.Grant
	if req.Wait {
		g, err = s.cfg.Budget.Wait(r.Context(), p)
	} else {
		g, err = s.cfg.Budget.Admit(r.Context(), p)
	}
	s.metrics.admissions.WithLabelValues(string(kind), budgetResult(err)).Inc()
	if err != nil {
		return failed("admitting a request", err)
	}
	writeJSON(w, http.StatusOK, g)
	return nil
}

type settleRequest struct {
	Actual *int64 `json:"actual"`
}

type settleResponse struct {
	ID     string `json:"id"`
	Actual int64  `json:"actual"`
}

func (s *Server) budgetSettle(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req settleRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Actual == nil {
		return badRequest("actual", "actual is missing: the bytes the transfer really used")
	}
	if err := s.cfg.Budget.Settle(r.Context(), id, *req.Actual); err != nil {
		return failed("settling a grant", err)
	}
	s.metrics.settlements.Inc()
	writeJSON(w, http.StatusOK, settleResponse{ID: id, Actual: *req.Actual})
	return nil
}

func (s *Server) budgetReport(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.cfg.Budget.Report(r.Context())
	if err != nil {
		return failed("reading the budget", err)
	}
	writeJSON(w, http.StatusOK, newBudgetView(rep))
	return nil
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
