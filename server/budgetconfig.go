package server

import (
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/budget"
)

func newSourceConfigView(src budget.Source, created bool) api.SourceConfig {
	pace := src.Pace
	switch pace {
	case 0:
		pace = budget.DefaultPace
	case budget.NoPace:
		pace = 0
	}
	return api.SourceConfig{Name: src.Name, OwnerDailyLimit: src.OwnerDailyLimit, ReportedDailyLimit: src.ReportedDailyLimit,
		Share: src.Share.String(), ReservePercent: src.ReservePercent, PaceSeconds: pace.Seconds(), Created: created}
}

func (s *Server) findSource(name string) (budget.Source, bool) {
	for _, src := range s.cfg.Budget.Sources() {
		if src.Name == name {
			return src, true
		}
	}
	return budget.Source{}, false
}

func (s *Server) budgetSetSource(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var req api.SourceRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		return err
	}
	src, err := requestedSource(name, &req)
	if err != nil {
		return err
	}
	// Another node may have changed the source: start from the stored
	// settings.
	if err := s.cfg.Budget.Refresh(r.Context()); err != nil {
		return failed("reading the budget settings", err)
	}
	old, existed := s.findSource(name)
	src.ReportedDailyLimit = old.ReportedDailyLimit
	if req.ReportedDailyLimit != nil {
		src.ReportedDailyLimit = req.ReportedDailyLimit
		if *req.ReportedDailyLimit == 0 {
			// As budget.ReportLimit: a reported zero means "not known".
			src.ReportedDailyLimit = nil
		}
	}
	if err := src.Validate(); err != nil {
		return sourceError(err)
	}
	if err := s.cfg.Budget.SetSource(r.Context(), src); err != nil {
		return failed("storing a budget source", err)
	}
	s.log.Info("server: budget source set", "source", name, "share", src.Share.String(), "created", !existed)
	status := http.StatusOK
	if !existed {
		status = http.StatusCreated
	}
	writeJSON(w, status, newSourceConfigView(src, !existed))
	return nil
}

// requestedSource turns what a PUT says about source name into a
// budget.Source; the budget judges the values.
func requestedSource(name string, req *api.SourceRequest) (budget.Source, error) {
	src := budget.Source{Name: name, OwnerDailyLimit: req.OwnerDailyLimit, ReservePercent: req.ReservePercent}
	share, err := budget.ParseShare(req.Share)
	if err != nil {
		return src, err
	}
	src.Share = share
	if p := req.PaceSeconds; p != nil {
		// The API says 0 for "no pacing", where the budget says a
		// negative pace; a negative figure here is a mistake.
		if *p < 0 || math.IsNaN(*p) || math.IsInf(*p, 0) {
			return src, badRequest("pace_seconds", "pace_seconds must be 0 (no pacing) or a positive number of seconds")
		}
		src.Pace = time.Duration(min(*p, budget.MaxPace.Seconds()+1) * float64(time.Second))
		if src.Pace == 0 {
			src.Pace = budget.NoPace
		}
	}
	return src, nil
}

// sourceError names a bad source setting as the API spells it: the
// budget's pace is the API's pace_seconds.
func sourceError(err error) error {
	if ie, ok := errors.AsType[*budget.InputError](err); ok && ie.Field == "pace" {
		return badRequest("pace_seconds", "pace_seconds: %s", ie.Reason)
	}
	return err
}

func (s *Server) budgetRemoveSource(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if s.feedByName(name) != nil {
		return conflict("name", "a configured feed polls this source; remove the feed from the configuration first, or set owner_daily_limit to 0 to stop its work")
	}
	if err := s.cfg.Budget.RemoveSource(r.Context(), name); err != nil {
		switch {
		case errors.Is(err, budget.ErrUnknownSource):
			return notFound("name", "no source of that name is configured")
		case errors.Is(err, budget.ErrConfiguredSource):
			return conflict("name", "the source comes from the daemon's configuration and has no run-time settings to remove; remove it from the configuration instead")
		}
		return failed("removing a budget source", err)
	}
	s.log.Info("server: budget source removed", "source", name)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// budgetResetSource returns a configured source, a feed's too, to its
// configured settings on every node.
func (s *Server) budgetResetSource(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	changed, err := s.cfg.Budget.ResetSource(r.Context(), name)
	switch {
	case errors.Is(err, budget.ErrUnknownSource):
		return notFound("name", "no source of that name is configured")
	case errors.Is(err, budget.ErrRunTimeSource):
		return conflict("name", "the source was added at run time and has no configured settings to go back to; remove it instead")
	case err != nil:
		return failed("resetting a budget source", err)
	}
	if changed {
		s.log.Info("server: budget source back on its configured settings", "source", name)
	}
	writeJSON(w, http.StatusOK, api.SourceReset{Name: name, Reset: changed})
	return nil
}

func (s *Server) budgetPause(w http.ResponseWriter, r *http.Request) error {
	var req api.PauseRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Paused == nil {
		return badRequest("paused", "paused is missing: true pauses all background work, false resumes it")
	}
	if err := s.cfg.Budget.Refresh(r.Context()); err != nil {
		return failed("reading the budget settings", err)
	}
	was := s.cfg.Budget.Paused()
	if err := s.cfg.Budget.Pause(r.Context(), *req.Paused); err != nil {
		return failed("storing the pause", err)
	}
	if was != *req.Paused {
		s.log.Info("server: background work paused by the owner", "paused", *req.Paused)
	}
	writeJSON(w, http.StatusOK, api.PauseResult{Paused: *req.Paused})
	return nil
}

// budgetPauseSource is POST /v1/budget/sources/{name}/pause: one source's
// background work is paused or resumed on every node, the others go on.
func (s *Server) budgetPauseSource(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := budget.ValidateSourceName(name); err != nil {
		return err
	}
	var req api.PauseRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Paused == nil {
		return badRequest("paused", "paused is missing: true pauses the source's background work, false resumes it")
	}
	if err := s.cfg.Budget.Refresh(r.Context()); err != nil {
		return failed("reading the budget settings", err)
	}
	was := s.cfg.Budget.SourcePaused(name)
	if err := s.cfg.Budget.PauseSource(r.Context(), name, *req.Paused); err != nil {
		if errors.Is(err, budget.ErrUnknownSource) {
			return notFound("name", "no source of that name is configured")
		}
		return failed("storing a source's pause", err)
	}
	if was != *req.Paused {
		s.log.Info("server: a budget source paused or resumed by the owner", "source", name, "paused", *req.Paused)
	}
	writeJSON(w, http.StatusOK, api.SourcePauseResult{Name: name, Paused: *req.Paused})
	return nil
}
