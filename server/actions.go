package server

import (
	"net/http"
	"strings"

	"github.com/hostguard/hostguard/api"
)

// The operator's actions: the routes the dashboard's buttons post to
// (route.action), which a session may call with its CSRF token (login.go)
// and which are written to the log with who called them. Most act through
// routes of their capability (guard reset, budget pause); the ones here
// had no route before the dashboard needed them.

// logAction writes each call of an action route to the log: the route,
// what it named in its path, who called it and the answer's status.
func (s *Server) logAction(pattern string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		args := []any{"route", pattern, "by", actor(r), "status", sw.code}
		// The path's names are hosts and item ids, which the API logs
		// elsewhere too; a URL in a body is not read here.
		for _, k := range []string{"name", "id"} {
			if strings.Contains(pattern, "{"+k+"}") {
				args = append(args, k, r.PathValue(k))
			}
		}
		s.log.Info("server: operator action", args...)
	})
}

// statusWriter notes the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noBody refuses a body with anything in it, for the routes that take
// none: a field sent there would be a mistake the caller should hear of.
func (s *Server) noBody(w http.ResponseWriter, r *http.Request) error {
	return s.decodeOptionalJSON(w, r, &struct{}{})
}

// hostReset is POST /v1/hosts/{name}/reset: the tracker forgets the host,
// so it is healthy and available again (health.Tracker.Reset). It takes
// no body.
func (s *Server) hostReset(w http.ResponseWriter, r *http.Request) error {
	name, err := hostName(r)
	if err != nil {
		return err
	}
	if err := s.noBody(w, r); err != nil {
		return err
	}
	deleted, err := s.cfg.Health.Reset(r.Context(), name)
	if err != nil {
		return failed("resetting a host", err)
	}
	writeJSON(w, http.StatusOK, api.HostReset{Name: name, Reset: deleted})
	return nil
}

// itemDueNow is POST /v1/items/{id}/due-now: a waiting item becomes due at
// once (retry.Scheduler.DueNow). It takes no body.
func (s *Server) itemDueNow(w http.ResponseWriter, r *http.Request) error {
	if err := s.noBody(w, r); err != nil {
		return err
	}
	res, err := s.cfg.Retry.DueNow(r.Context(), r.PathValue("id"))
	if err != nil {
		return failed("making an item due", err)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// itemForget is DELETE /v1/items/{id}: the item is deleted, whatever its
// state (retry.Scheduler.Forget).
func (s *Server) itemForget(w http.ResponseWriter, r *http.Request) error {
	if err := s.noBody(w, r); err != nil {
		return err
	}
	if err := s.cfg.Retry.Forget(r.Context(), r.PathValue("id")); err != nil {
		return failed("forgetting an item", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
