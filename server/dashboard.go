package server

import (
	"encoding/json"
	"net/http"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/server/internal/dashboard"
)

// dashboardData is what the page starts from: the report itself, so the
// first paint needs no request, and how the script should behave.
type dashboardData struct {
	RefreshMS int64 `json:"refresh_ms"`
	Session   bool  `json:"session"`
	// CSRF is the session's CSRF token, which the script sends with each
	// action; empty without a session.
	CSRF   string     `json:"csrf,omitempty"`
	Report api.Status `json:"report"`
}

// dashboard serves GET /. With a token, requireTokenOrSession has already
// answered a request without credentials with the login form.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) error {
	every := s.cfg.DashboardRefresh
	if every <= 0 {
		every = DefaultDashboardRefresh
	}
	// encoding/json escapes <, > and &, so no name can end the script
	// element the data sits in.
	d := dashboardData{RefreshMS: every.Milliseconds(), Session: s.token.set, Report: s.statusReport(r.Context())}
	if c, err := r.Cookie(sessionCookie); err == nil && s.token.set && s.sessions.Valid(c.Value) {
		d.CSRF = s.sessions.CSRF(c.Value)
	}
	data, err := json.Marshal(d)
	if err != nil {
		return failed("rendering the dashboard", err)
	}
	dashboard.Main.Write(w, http.StatusOK, string(data))
	return nil
}
