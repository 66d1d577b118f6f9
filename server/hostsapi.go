package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/hostguard/hostguard/health"
)

// hostView is one host in the API: the tracker's status plus how long its
// backoff still runs, in seconds.
type hostView struct {
	health.Status
	RetryInSeconds float64 `json:"retry_in_seconds"`
}

func newHostView(st health.Status) hostView {
	return hostView{Status: st, RetryInSeconds: st.RetryIn.Seconds()}
}

type touchRequest struct {
	OK *bool `json:"ok"`
}

type touchResponse struct {
	hostView
	Counted bool `json:"counted"`
}

func (s *Server) needHealth(w http.ResponseWriter) bool {
	if s.cfg.Health == nil {
		writeError(w, &apiError{Status: http.StatusNotImplemented, Message: "server: this daemon has no host tracker configured"})
		return false
	}
	return true
}

// hostName reads and checks the {name} path segment. The tracker would
// refuse a bad one too, but only after the call; checking first keeps a
// bad request from reaching the store at all.
func hostName(r *http.Request) (string, *apiError) {
	name := r.PathValue("name")
	if _, err := health.NormalizeName(name); err != nil {
		return "", badRequest("name", "%s", strings.TrimPrefix(err.Error(), "health: "))
	}
	return name, nil
}

func (s *Server) hostTouch(w http.ResponseWriter, r *http.Request) {
	if !s.needHealth(w) {
		return
	}
	name, e := hostName(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var req touchRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.OK == nil {
		writeError(w, badRequest("ok", "ok is missing; true if the host answered, false if it did not"))
		return
	}
	res, err := s.cfg.Health.TouchResult(r.Context(), name, *req.OK)
	if err != nil {
		s.internalError(w, "touching a host", err)
		return
	}
	writeJSON(w, http.StatusOK, touchResponse{hostView: newHostView(res.Status), Counted: res.Counted})
}

func (s *Server) hostGet(w http.ResponseWriter, r *http.Request) {
	if !s.needHealth(w) {
		return
	}
	name, e := hostName(r)
	if e != nil {
		writeError(w, e)
		return
	}
	st, err := s.cfg.Health.Status(r.Context(), name)
	if err != nil {
		s.internalError(w, "reading a host", err)
		return
	}
	writeJSON(w, http.StatusOK, newHostView(st))
}

type hostList struct {
	Hosts []hostView `json:"hosts"`
	// Next, when not empty, is the after= value of the next page.
	Next string `json:"next,omitempty"`
}

func (s *Server) hostList(w http.ResponseWriter, r *http.Request) {
	if !s.needHealth(w) {
		return
	}
	q := r.URL.Query()
	for k := range q {
		if k != "view" && k != "limit" && k != "after" {
			writeError(w, badRequest(k, "unknown query parameter %q; want view, limit or after", k))
			return
		}
	}
	p := health.ListParams{View: health.All, Limit: health.DefaultListLimit, After: q.Get("after")}
	if v := q.Get("view"); v != "" {
		view, err := health.ParseView(v)
		if err != nil {
			writeError(w, badRequest("view", "unknown view %q; want healthy, available, unhealthy, backoff or all", v))
			return
		}
		p.View = view
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > health.MaxListLimit {
			writeError(w, badRequest("limit", "limit must be a whole number from 1 to %d", health.MaxListLimit))
			return
		}
		p.Limit = n
	}
	list, err := s.cfg.Health.List(r.Context(), p)
	if err != nil {
		s.internalError(w, "listing hosts", err)
		return
	}
	out := hostList{Hosts: make([]hostView, 0, len(list))}
	for _, st := range list {
		out.Hosts = append(out.Hosts, newHostView(st))
	}
	if len(list) == p.Limit {
		out.Next = list[len(list)-1].Name
	}
	writeJSON(w, http.StatusOK, out)
}
