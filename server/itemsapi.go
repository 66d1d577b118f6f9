package server

import (
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/retry"
)

// itemGet answers GET /v1/items/{id}, and the operations that settle a
// lease with the item as it is after them.
func (s *Server) itemGet(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	item, err := s.cfg.Retry.Get(r.Context(), id)
	if err != nil {
		return failed("reading an item", err)
	}
	writeJSON(w, http.StatusOK, item)
	return nil
}

func (s *Server) itemsAdd(w http.ResponseWriter, r *http.Request) error {
	var req api.AddRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.Items == nil:
		return badRequest("items", "items is missing: {\"items\":[{\"id\":\"...\"}]}")
	case len(req.Items) == 0:
		return badRequest("items", "items is empty")
	}
	res, err := s.cfg.Retry.Add(r.Context(), req.Items...)
	if err != nil {
		return failed("adding items", err)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// leaseDuration reads a lease length given in seconds; the scheduler
// judges its range.
func leaseDuration(field string, secs *float64) (time.Duration, error) {
	if secs == nil {
		return 0, badRequest(field, "%s is missing", field)
	}
	v := *secs
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, badRequest(field, "%s must be a number of seconds", field)
	}
	// Clamped just past the longest lease so that the conversion cannot
	// overflow and the scheduler still refuses it.
	return time.Duration(min(v, retry.MaxLease.Seconds()+1) * float64(time.Second)), nil
}

func (s *Server) itemsClaim(w http.ResponseWriter, r *http.Request) error {
	var req api.ClaimRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.N == nil {
		return badRequest("n", "n is missing: how many items to claim, 1 to %d", retry.MaxClaim)
	}
	lease, err := leaseDuration("lease_seconds", req.LeaseSeconds)
	if err != nil {
		return err
	}
	var wait time.Duration
	if req.WaitSeconds != nil {
		v := *req.WaitSeconds
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return badRequest("wait_seconds", "wait_seconds must be a number of seconds")
		}
		// Clamped just past the longest wait so that the conversion
		// cannot overflow and the scheduler still refuses it.
		wait = time.Duration(min(v, retry.MaxClaimWait.Seconds()+1) * float64(time.Second))
	}
	// A waiting claim ends when the daemon starts shutting down, with no
	// leases, so that it does not hold the drain up.
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	defer context.AfterFunc(s.draining, stop)()
	leases, err := s.cfg.Retry.Claim(ctx, retry.ClaimParams{N: *req.N, Lease: lease, Worker: req.Worker, Wait: wait})
	if err != nil && !(errors.Is(err, context.Canceled) && r.Context().Err() == nil && wait > 0) {
		return failed("claiming items", err)
	}
	if leases == nil {
		leases = []retry.Lease{}
	}
	writeJSON(w, http.StatusOK, api.ClaimResponse{Leases: leases})
	return nil
}

// itemSettle answers POST /v1/items/{id}/succeed, .../fail and
// .../release: it settles the lease the path's id and the body's token
// name, and answers with the item as it is now. Each operation reads a
// body of its own, so that a field sent to the wrong one (a class on
// succeed) is an unknown field, not ignored.
func (s *Server) itemSettle(op retry.Op) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		o := retry.Outcome{Lease: retry.LeaseRef{ID: r.PathValue("id")}, Op: op}
		var err error
		if op == retry.OpFail {
			var req api.FailRequest
			err = s.decodeJSON(w, r, &req)
			o.Lease.Token, o.Class, o.Note, o.Source, o.Host = req.Lease, req.Class, req.Note, req.Source, req.Host
		} else {
			var req api.LeaseRequest
			err = s.decodeJSON(w, r, &req)
			o.Lease.Token = req.Lease
		}
		if err != nil {
			return err
		}
		if err := s.cfg.Retry.SettleOne(r.Context(), o); err != nil {
			return failed(op.String()+" of an item", err)
		}
		return s.itemGet(w, r)
	}
}

func (s *Server) itemExtend(w http.ResponseWriter, r *http.Request) error {
	var req api.ExtendRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	d, err := leaseDuration("lease_seconds", req.LeaseSeconds)
	if err != nil {
		return err
	}
	ref := retry.LeaseRef{ID: r.PathValue("id"), Token: req.Lease}
	until, err := s.cfg.Retry.Extend(r.Context(), ref, d)
	if err != nil {
		return failed("extending a lease", err)
	}
	writeJSON(w, http.StatusOK, api.ExtendResponse{ID: ref.ID, Until: until.UTC()})
	return nil
}

func (s *Server) itemObserve(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req api.ObserveRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		return err
	}
	res, err := s.cfg.Retry.Observe(r.Context(), id, req)
	if err != nil {
		return failed("observing an item", observedID(err))
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// observedID names the path's id as the route spells it: Observe is
// ObserveMany of one, whose bad id is ids[0].
func observedID(err error) error {
	if ie, ok := errors.AsType[*retry.InputError](err); ok && ie.Field == "ids[0]" {
		return badRequest("id", "id: %s", ie.Reason)
	}
	return err
}

// itemUnknownOp answers POST /v1/items/{id}/{op} for an op that is none
// of the six, naming them: the mux's plain 404 would not.
func itemUnknownOp(_ http.ResponseWriter, r *http.Request) error {
	return notFound("op", "unknown item operation %q; want succeed, fail, extend, release, observe or due-now", r.PathValue("op"))
}

func (s *Server) itemsStats(w http.ResponseWriter, r *http.Request) error {
	// One read: the counters and the histogram agree on what is due.
	st, due, err := s.cfg.Retry.StatsAndDue(r.Context())
	if err != nil {
		return failed("reading queue statistics", err)
	}
	writeJSON(w, http.StatusOK, api.ItemsStats{QueueStats: api.QueueStats{Stats: st}, Due: due})
	return nil
}
