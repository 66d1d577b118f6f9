package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// newItem is one item of POST /v1/items. Its payload is base64, as
// encoding/json writes []byte.
type newItem struct {
	ID        string    `json:"id"`
	Priority  int       `json:"priority"`
	Payload   []byte    `json:"payload"`
	NotBefore time.Time `json:"not_before"`
	Host      string    `json:"host"`
}

type addRequest struct {
	Items []newItem `json:"items"`
}

func (s *Server) itemsAdd(w http.ResponseWriter, r *http.Request) error {
	var req addRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.Items == nil:
		return badRequest("items", "items is missing: {\"items\":[{\"id\":\"...\"}]}")
	case len(req.Items) == 0:
		return badRequest("items", "items is empty")
	}
	items := make([]retry.NewItem, len(req.Items))
	for i, it := range req.Items {
		items[i] = retry.NewItem{ID: it.ID, Priority: it.Priority, Payload: it.Payload, NotBefore: it.NotBefore, Host: it.Host}
	}
	res, err := s.cfg.Retry.Add(r.Context(), items...)
	if err != nil {
		return failed("adding items", err)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

type claimRequest struct {
	N            *int     `json:"n"`
	LeaseSeconds *float64 `json:"lease_seconds"`
	Worker       string   `json:"worker"`
	// WaitSeconds makes the claim a long poll: it answers as soon as work
	// is due, or with no leases after this long.
	WaitSeconds *float64 `json:"wait_seconds"`
}

type claimResponse struct {
	Leases []retry.Lease `json:"leases"`
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
	var req claimRequest
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
	writeJSON(w, http.StatusOK, claimResponse{Leases: leases})
	return nil
}

// The five operations on one item are five routes, each with a body of its
// own, so that a field sent to the wrong one (a class on succeed) is an
// unknown field, not ignored.

type leaseRequest struct {
	Lease string `json:"lease"`
}

type failRequest struct {
	Lease string `json:"lease"`
	Class string `json:"class"`
	Note  string `json:"note"`
	// Source names where the failure's evidence came from (retry.Outcome).
	Source string `json:"source"`
	Host   string `json:"host"`
}

type extendRequest struct {
	Lease        string   `json:"lease"`
	LeaseSeconds *float64 `json:"lease_seconds"`
}

type extendResponse struct {
	ID    string    `json:"id"`
	Until time.Time `json:"until"`
}

type observeRequest struct {
	Boost        int    `json:"boost"`
	AddIfMissing bool   `json:"add_if_missing"`
	Priority     int    `json:"priority"`
	Payload      []byte `json:"payload"`
	Source       string `json:"source"`
}

// itemLease reads the {id} segment and the lease token every operation on
// a lease names.
func itemLease(r *http.Request, token string) (retry.LeaseRef, error) {
	id := r.PathValue("id")
	return retry.LeaseRef{ID: id, Token: token}, nil
}

// settled answers a settled lease with the item as it is now.
func (s *Server) settled(w http.ResponseWriter, r *http.Request, id string) error {
	item, err := s.cfg.Retry.Get(r.Context(), id)
	if err != nil {
		return failed("reading an item", err)
	}
	writeJSON(w, http.StatusOK, item)
	return nil
}

func (s *Server) itemSucceed(w http.ResponseWriter, r *http.Request) error {
	var req leaseRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	ref, err := itemLease(r, req.Lease)
	if err != nil {
		return err
	}
	if err := s.cfg.Retry.Succeed(r.Context(), ref); err != nil {
		return failed("succeed of an item", err)
	}
	return s.settled(w, r, ref.ID)
}

func (s *Server) itemRelease(w http.ResponseWriter, r *http.Request) error {
	var req leaseRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	ref, err := itemLease(r, req.Lease)
	if err != nil {
		return err
	}
	if err := s.cfg.Retry.Release(r.Context(), ref); err != nil {
		return failed("release of an item", err)
	}
	return s.settled(w, r, ref.ID)
}

func (s *Server) itemFail(w http.ResponseWriter, r *http.Request) error {
	var req failRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	ref, err := itemLease(r, req.Lease)
	if err != nil {
		return err
	}
	o := retry.Outcome{Lease: ref, Op: retry.OpFail, Class: req.Class, Note: req.Note, Source: req.Source, Host: req.Host}
	if err := s.cfg.Retry.SettleOne(r.Context(), o); err != nil {
		return failed("fail of an item", err)
	}
	return s.settled(w, r, ref.ID)
}

func (s *Server) itemExtend(w http.ResponseWriter, r *http.Request) error {
	var req extendRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	ref, err := itemLease(r, req.Lease)
	if err != nil {
		return err
	}
	d, err := leaseDuration("lease_seconds", req.LeaseSeconds)
	if err != nil {
		return err
	}
	until, err := s.cfg.Retry.Extend(r.Context(), ref, d)
	if err != nil {
		return failed("extending a lease", err)
	}
	writeJSON(w, http.StatusOK, extendResponse{ID: ref.ID, Until: until.UTC()})
	return nil
}

func (s *Server) itemObserve(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req observeRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		return err
	}
	res, err := s.cfg.Retry.Observe(r.Context(), id, retry.ObserveParams{
		Boost: req.Boost, AddIfMissing: req.AddIfMissing, Priority: req.Priority, Payload: req.Payload, Source: req.Source})
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

func (s *Server) itemGet(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	item, err := s.cfg.Retry.Get(r.Context(), id)
	if err != nil {
		return failed("reading an item", err)
	}
	writeJSON(w, http.StatusOK, item)
	return nil
}

func (s *Server) itemsStats(w http.ResponseWriter, r *http.Request) error {
	st, err := s.cfg.Retry.Stats(r.Context())
	if err != nil {
		return failed("reading queue statistics", err)
	}
	due, err := s.cfg.Retry.Due(r.Context())
	if err != nil {
		return failed("reading queue statistics", err)
	}
	writeJSON(w, http.StatusOK, itemsStatsView{st, due})
	return nil
}

// itemsStatsView is GET /v1/items/stats: the statistics and, under "due",
// the due histogram.
type itemsStatsView struct {
	stats retry.Stats
	due   retry.DueHistogram
}

// MarshalJSON adds "due" to the statistics' own encoding, which embedding
// cannot do: Stats has a MarshalJSON of its own.
func (v itemsStatsView) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(v.stats)
	if err != nil {
		return nil, err
	}
	d, err := json.Marshal(v.due)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("}"))
	b = append(b, `,"due":`...)
	b = append(b, d...)
	return append(b, '}'), nil
}
