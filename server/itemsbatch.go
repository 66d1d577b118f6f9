package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/retry"
)

// The batch item routes exist for throughput: a worker over HTTP pays a
// round trip and a store transaction per call, so one call for a whole
// claim's results (or a crawler's burst of sightings) is the difference
// between hundreds and thousands of items a second.

// itemsObserve is POST /v1/items/observe: ObserveMany.
func (s *Server) itemsObserve(w http.ResponseWriter, r *http.Request) error {
	var req api.ObserveBatchRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if len(req.IDs) == 0 {
		return badRequest("ids", "ids is missing or empty: {\"ids\":[\"...\"]}")
	}
	res, err := s.cfg.Retry.ObserveMany(r.Context(), req.IDs, retry.ObserveParams{
		Boost: req.Boost, AddIfMissing: req.AddIfMissing, Priority: req.Priority, Source: req.Source})
	if err != nil {
		return failed("observing items", err)
	}
	writeJSON(w, http.StatusOK, api.ObserveBatchResponse{Results: res})
	return nil
}

var settleOps = map[string]retry.Op{"succeed": retry.OpSucceed, "fail": retry.OpFail, "release": retry.OpRelease}

// itemsSettle is POST /v1/items/settle: Settle for a batch of leases.
func (s *Server) itemsSettle(w http.ResponseWriter, r *http.Request) error {
	var req api.SettleRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	outs, err := settleOutcomes(req.Outcomes)
	if err != nil {
		return err
	}
	errs, err := s.cfg.Retry.Settle(r.Context(), outs)
	if err != nil {
		return failed("settling leases", err)
	}
	res := make([]api.SettleResult, len(outs))
	for i, e := range errs {
		res[i] = api.SettleResult{ID: outs[i].Lease.ID, OK: e == nil}
		switch {
		case e == nil:
		case errors.Is(e, retry.ErrLeaseLost):
			res[i].Error = api.SettleLeaseLost
		case errors.Is(e, retry.ErrNotFound):
			res[i].Error = api.SettleNotFound
		case errors.Is(e, retry.ErrInvalid):
			// A class or note the scheduler cannot store refuses that
			// outcome only; its lease stays.
			res[i].Error = api.SettleInvalid
			res[i].Message = innermost(e).Error()
		default:
			return failed("settling leases", e)
		}
	}
	writeJSON(w, http.StatusOK, api.SettleResponse{Results: res})
	return nil
}

// settleOutcomes checks a batch whole before any of it is settled.
func settleOutcomes(in []api.SettleOutcome) ([]retry.Outcome, error) {
	if len(in) == 0 {
		return nil, badRequest("outcomes", "outcomes is missing or empty: {\"outcomes\":[{\"id\":\"...\",\"lease\":\"...\",\"op\":\"succeed\"}]}")
	}
	outs := make([]retry.Outcome, len(in))
	for i, o := range in {
		field := func(name string) string { return fmt.Sprintf("outcomes[%d].%s", i, name) }
		op, ok := settleOps[o.Op]
		if !ok {
			return nil, badRequest(field("op"), "%s %q is not succeed, fail or release (extend has its own route)", field("op"), o.Op)
		}
		if op == retry.OpFail && o.Class == "" {
			// A missing field is a malformed request; a class the
			// scheduler cannot store refuses only its own outcome.
			return nil, badRequest(field("class"), "%s is missing: why the attempt failed", field("class"))
		}
		if op != retry.OpFail && (o.Class != "" || o.Note != "" || o.Source != "" || o.Host != "") {
			return nil, badRequest(field("class"), "class, note, source and host go with op fail only")
		}
		outs[i] = retry.Outcome{Lease: retry.LeaseRef{ID: o.ID, Token: o.Lease}, Op: op, Class: o.Class, Note: o.Note, Source: o.Source, Host: o.Host}
	}
	return outs, nil
}
