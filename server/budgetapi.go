package server

import (
	"errors"
	"net/http"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/budget"
)

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
	var req api.AdmitRequest
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

func (s *Server) budgetSettle(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req api.GrantSettleRequest
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
	writeJSON(w, http.StatusOK, api.GrantSettlement{ID: id, Actual: *req.Actual})
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

func newBudgetView(r budget.Report) *api.BudgetReport {
	v := &api.BudgetReport{Report: r, Sources: make([]api.BudgetSource, 0, len(r.Sources))}
	for _, s := range r.Sources {
		v.Sources = append(v.Sources, api.BudgetSource{SourceReport: s,
			PollIntervalSeconds: s.PollInterval.Seconds(), PaceSeconds: s.Pace.Seconds()})
	}
	return v
}
