package server

import (
	"context"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/api"
)

// readyTimeout bounds each readiness check: a probe that hangs on a dead
// store is as not-ready as one that fails.
const readyTimeout = 2 * time.Second

// readyz answers whether this daemon can do its work: its store answers
// with the schema it started with (Config.Ready), and a leader is known
// (this node, or a live lease held by another). /healthz says only that
// the process is alive; orchestrators route traffic by this one.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	v := api.Readiness{Status: "ready", Checks: map[string]string{"store": "ok", "leader": "ok"}}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(ctx); err != nil {
			// The reason is the check's own short text, never a driver's.
			v.Checks["store"] = err.Error()
			v.Status = "not ready"
		}
	}
	if reason := s.leaderKnown(ctx); reason != "" {
		v.Checks["leader"] = reason
		v.Status = "not ready"
	}
	if v.Status != "ready" {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, v)
		return nil
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// leaderKnown says why no leader is known, or "" when one is.
func (s *Server) leaderKnown(ctx context.Context) string {
	el := s.cfg.Elector
	if el == nil || s.leading.Load() {
		return ""
	}
	l, err := el.Current(ctx)
	switch {
	case err != nil:
		return "the leader lease cannot be read"
	case l.Node == "" || !l.ExpiresAt.After(el.Now()):
		return "no node holds the leader lease"
	}
	return ""
}
