package server

import (
	"net/http"
	"strconv"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/health"
)

func newHostView(st health.Status) api.Host {
	return api.Host{Status: st, RetryInSeconds: st.RetryIn.Seconds()}
}

// hostName reads and checks the {name} path segment. The tracker would
// refuse a bad one too, but only after the call; checking first keeps a
// bad request from reaching the store at all.
func hostName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if _, err := health.NormalizeName(name); err != nil {
		return "", err
	}
	return name, nil
}

func (s *Server) hostTouch(w http.ResponseWriter, r *http.Request) error {
	name, err := hostName(r)
	if err != nil {
		return err
	}
	var req api.TouchRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.OK == nil {
		return badRequest("ok", "ok is missing; true if the host answered, false if it did not")
	}
	res, err := s.cfg.Health.TouchResult(r.Context(), name, *req.OK)
	if err != nil {
		return failed("touching a host", err)
	}
	s.recordTouch(res, *req.OK)
	if *req.OK {
		s.wakeHost(name)
	}
	writeJSON(w, http.StatusOK, api.TouchResult{Host: newHostView(res.Status), Counted: res.Counted})
	return nil
}

func (s *Server) hostGet(w http.ResponseWriter, r *http.Request) error {
	name, err := hostName(r)
	if err != nil {
		return err
	}
	st, err := s.cfg.Health.Status(r.Context(), name)
	if err != nil {
		return failed("reading a host", err)
	}
	if !st.Known {
		// An unknown host is healthy to the tracker, but answering with an
		// invented record made a typo look like a healthy host.
		return notFound("name", "no record of host %q (never reported, or reset)", st.Display)
	}
	writeJSON(w, http.StatusOK, newHostView(st))
	return nil
}

func (s *Server) hostList(w http.ResponseWriter, r *http.Request) error {
	p, err := hostListParams(r)
	if err != nil {
		return err
	}
	list, err := s.cfg.Health.List(r.Context(), p)
	if err != nil {
		return failed("listing hosts", err)
	}
	out := api.HostPage{Hosts: make([]api.Host, 0, len(list))}
	for _, st := range list {
		out.Hosts = append(out.Hosts, newHostView(st))
	}
	if len(list) == p.Limit {
		out.Next = list[len(list)-1].Name
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// hostListParams reads GET /v1/hosts' query: view, limit and after.
func hostListParams(r *http.Request) (health.ListParams, error) {
	q := r.URL.Query()
	for k := range q {
		if k != "view" && k != "limit" && k != "after" {
			return health.ListParams{}, badRequest(k, "unknown query parameter %q; want view, limit or after", k)
		}
	}
	p := health.ListParams{View: health.All, Limit: health.DefaultListLimit, After: q.Get("after")}
	if v := q.Get("view"); v != "" {
		view, err := health.ParseView(v)
		if err != nil {
			return p, err
		}
		p.View = view
	}
	if l := q.Get("limit"); l != "" {
		// 0 would mean the default to the tracker; in a query it is a
		// mistake. The tracker checks the upper bound.
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return p, badRequest("limit", "limit must be a whole number from 1 to %d", health.MaxListLimit)
		}
		p.Limit = n
	}
	return p, nil
}
