package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/hostguard/hostguard/retry"
)

// The batch item routes exist for throughput: a worker over HTTP pays a
// round trip and a store transaction per call, so one call for a whole
// claim's results (or a crawler's burst of sightings) is the difference
// between hundreds and thousands of items a second.

type observeBatchRequest struct {
	IDs          []string `json:"ids"`
	Boost        int      `json:"boost"`
	AddIfMissing bool     `json:"add_if_missing"`
	Priority     int      `json:"priority"`
}

type observeBatchResponse struct {
	Results []retry.ObserveResult `json:"results"`
}

// itemsObserve is POST /v1/items/observe: ObserveMany.
func (s *Server) itemsObserve(w http.ResponseWriter, r *http.Request) {
	if !s.needRetry(w) {
		return
	}
	var req observeBatchRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case len(req.IDs) == 0:
		writeError(w, badRequest("ids", "ids is missing or empty: {\"ids\":[\"...\"]}"))
		return
	case len(req.IDs) > retry.MaxAdd:
		writeError(w, badRequest("ids", "%d ids in one request; at most %d", len(req.IDs), retry.MaxAdd))
		return
	case req.Boost < 0:
		writeError(w, badRequest("boost", "boost must not be negative"))
		return
	case req.Priority > retry.MaxPriority || req.Priority < -retry.MaxPriority:
		writeError(w, badRequest("priority", "priority %d is outside ±%d", req.Priority, retry.MaxPriority))
		return
	}
	for i, id := range req.IDs {
		if e := checkItemID(fmt.Sprintf("ids[%d]", i), id); e != nil {
			writeError(w, e)
			return
		}
	}
	res, err := s.cfg.Retry.ObserveMany(r.Context(), req.IDs, retry.ObserveParams{
		Boost: req.Boost, AddIfMissing: req.AddIfMissing, Priority: req.Priority})
	if err != nil {
		s.retryError(w, "observing items", "ids", err)
		return
	}
	writeJSON(w, http.StatusOK, observeBatchResponse{Results: res})
}

type itemsSettleOutcome struct {
	ID    string `json:"id"`
	Lease string `json:"lease"`
	Op    string `json:"op"`
	Class string `json:"class"`
	Note  string `json:"note"`
}

type itemsSettleRequest struct {
	Outcomes []itemsSettleOutcome `json:"outcomes"`
}

// itemsSettleResult is one outcome's fate: ok, or why not. Lost and not-found
// outcomes are per item, not errors of the request, so the batch answers
// 200 and says which items the worker must drop.
type itemsSettleResult struct {
	ID    string `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"` // "lease_lost" or "not_found"
}

type itemsSettleResponse struct {
	Results []itemsSettleResult `json:"results"`
}

var settleOps = map[string]retry.Op{"succeed": retry.OpSucceed, "fail": retry.OpFail, "release": retry.OpRelease}

// itemsSettle is POST /v1/items/settle: Settle for a batch of leases.
func (s *Server) itemsSettle(w http.ResponseWriter, r *http.Request) {
	if !s.needRetry(w) {
		return
	}
	var req itemsSettleRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case len(req.Outcomes) == 0:
		writeError(w, badRequest("outcomes", "outcomes is missing or empty: {\"outcomes\":[{\"id\":\"...\",\"lease\":\"...\",\"op\":\"succeed\"}]}"))
		return
	case len(req.Outcomes) > retry.MaxClaim:
		writeError(w, badRequest("outcomes", "%d outcomes in one request; at most %d", len(req.Outcomes), retry.MaxClaim))
		return
	}
	outs := make([]retry.Outcome, len(req.Outcomes))
	for i, o := range req.Outcomes {
		field := func(name string) string { return fmt.Sprintf("outcomes[%d].%s", i, name) }
		if e := checkItemID(field("id"), o.ID); e != nil {
			writeError(w, e)
			return
		}
		if o.Lease == "" {
			writeError(w, badRequest(field("lease"), "%s is missing: the token claim returned", field("lease")))
			return
		}
		op, ok := settleOps[o.Op]
		if !ok {
			writeError(w, badRequest(field("op"), "%s %q is not succeed, fail or release (extend has its own route)", field("op"), o.Op))
			return
		}
		if op == retry.OpFail && o.Class == "" {
			writeError(w, badRequest(field("class"), "%s is missing: why the attempt failed", field("class")))
			return
		}
		if op != retry.OpFail && (o.Class != "" || o.Note != "") {
			writeError(w, badRequest(field("class"), "class and note go with op fail only"))
			return
		}
		outs[i] = retry.Outcome{Lease: retry.LeaseRef{ID: o.ID, Token: o.Lease}, Op: op, Class: o.Class, Note: o.Note}
	}
	errs, err := s.cfg.Retry.Settle(r.Context(), outs)
	if err != nil {
		s.retryError(w, "settling leases", "outcomes", err)
		return
	}
	res := make([]itemsSettleResult, len(outs))
	for i, e := range errs {
		res[i] = itemsSettleResult{ID: outs[i].Lease.ID, OK: e == nil}
		switch {
		case e == nil:
		case errors.Is(e, retry.ErrLeaseLost):
			res[i].Error = "lease_lost"
		case errors.Is(e, retry.ErrNotFound):
			res[i].Error = "not_found"
		default:
			s.internalError(w, "settling leases", e)
			return
		}
	}
	writeJSON(w, http.StatusOK, itemsSettleResponse{Results: res})
}
