package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// itemsList is GET /v1/items: a page of items, filtered by the query.
func (s *Server) itemsList(w http.ResponseWriter, r *http.Request) error {
	p, err := itemsListParams(r)
	if err != nil {
		return err
	}
	page, err := s.cfg.Retry.List(r.Context(), p)
	if err != nil {
		return failed("listing items", err)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// itemsListParams reads GET /v1/items' query: state, class, due_before,
// after and limit. The scheduler checks the values it owns (state names,
// class, cursor, the limit's upper bound); this checks the spelling.
func itemsListParams(r *http.Request) (retry.ListParams, error) {
	var p retry.ListParams
	q := r.URL.Query()
	for k, vv := range q {
		switch k {
		case "state", "class", "due_before", "after", "limit":
		default:
			return p, badRequest(k, "unknown query parameter %q; want state, class, due_before, after or limit", k)
		}
		if len(vv) > 1 {
			return p, badRequest(k, "%s is given %d times; give it once", k, len(vv))
		}
	}
	if v := q.Get("state"); v != "" {
		states, err := retry.ParseStates(v)
		if err != nil {
			return p, err
		}
		p.States = states
	}
	p.Class = q.Get("class")
	p.After = q.Get("after")
	if v := q.Get("due_before"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return p, badRequest("due_before", "%.40q is not an RFC 3339 time such as 2026-03-01T12:00:00Z", v)
		}
		p.DueBefore = t
	}
	if v := q.Get("limit"); v != "" {
		// 0 would mean the default to the scheduler; in a query it is a
		// mistake.
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > retry.MaxListLimit {
			return p, badRequest("limit", "limit must be a whole number from 1 to %d", retry.MaxListLimit)
		}
		p.Limit = n
	}
	return p, nil
}
