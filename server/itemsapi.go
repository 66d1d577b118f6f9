package server

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// maxAddBatch bounds one POST /v1/items. The body limit bounds it too, but
// a count is a clearer message than a byte figure.
const maxAddBatch = 10_000

// checkItemID is the part of the scheduler's id rules that can be checked
// before any work, so that a batch with one bad id is refused whole.
func checkItemID(field, id string) error {
	switch {
	case id == "":
		return badRequest(field, "%s is empty", field)
	case len(id) > retry.MaxIDBytes:
		return badRequest(field, "%s is %d bytes, more than %d", field, len(id), retry.MaxIDBytes)
	}
	return nil
}

// decodePayload reads a base64 payload (standard alphabet, padded, as
// encoding/json writes []byte).
func decodePayload(field, p string) ([]byte, error) {
	if p == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(p)
	if err != nil {
		return nil, badRequest(field, "%s is not standard base64", field)
	}
	if len(b) > retry.MaxPayloadBytes {
		return nil, badRequest(field, "%s is %d bytes, more than %d", field, len(b), retry.MaxPayloadBytes)
	}
	return b, nil
}

type newItem struct {
	ID        string    `json:"id"`
	Priority  int       `json:"priority"`
	Payload   string    `json:"payload"`
	NotBefore time.Time `json:"not_before"`
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
	case len(req.Items) > maxAddBatch:
		return badRequest("items", "%d items in one request; at most %d", len(req.Items), maxAddBatch)
	}
	items := make([]retry.NewItem, len(req.Items))
	for i, it := range req.Items {
		if err := checkItemID(fmt.Sprintf("items[%d].id", i), it.ID); err != nil {
			return err
		}
		if it.Priority > retry.MaxPriority || it.Priority < -retry.MaxPriority {
			return badRequest(fmt.Sprintf("items[%d].priority", i), "priority %d is outside ±%d", it.Priority, retry.MaxPriority)
		}
		p, err := decodePayload(fmt.Sprintf("items[%d].payload", i), it.Payload)
		if err != nil {
			return err
		}
		items[i] = retry.NewItem{ID: it.ID, Priority: it.Priority, Payload: p, NotBefore: it.NotBefore}
	}
	res, err := s.cfg.Retry.Add(r.Context(), items...)
	if err != nil {
		return failed("adding items", blame("items", err))
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

type claimRequest struct {
	N            *int     `json:"n"`
	LeaseSeconds *float64 `json:"lease_seconds"`
	Worker       string   `json:"worker"`
}

type claimResponse struct {
	Leases []retry.Lease `json:"leases"`
}

// leaseDuration checks a lease length given in seconds.
func leaseDuration(field string, secs *float64) (time.Duration, error) {
	if secs == nil {
		return 0, badRequest(field, "%s is missing", field)
	}
	v := *secs
	if math.IsNaN(v) || v <= 0 {
		return 0, badRequest(field, "%s must be positive", field)
	}
	if v > retry.MaxLease.Seconds() {
		return 0, badRequest(field, "%s is more than %.0f (%v)", field, retry.MaxLease.Seconds(), retry.MaxLease)
	}
	return time.Duration(v * float64(time.Second)), nil
}

func (s *Server) itemsClaim(w http.ResponseWriter, r *http.Request) error {
	var req claimRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.N == nil {
		return badRequest("n", "n is missing: how many items to claim, 1 to %d", retry.MaxClaim)
	}
	if *req.N < 1 || *req.N > retry.MaxClaim {
		return badRequest("n", "n %d is outside 1 to %d", *req.N, retry.MaxClaim)
	}
	lease, err := leaseDuration("lease_seconds", req.LeaseSeconds)
	if err != nil {
		return err
	}
	leases, err := s.cfg.Retry.Claim(r.Context(), retry.ClaimParams{N: *req.N, Lease: lease, Worker: req.Worker})
	if err != nil {
		return failed("claiming items", blame("worker", err))
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
	Payload      string `json:"payload"`
}

// itemLease reads the {id} segment and the lease token every operation on
// a lease names.
func itemLease(r *http.Request, token string) (retry.LeaseRef, error) {
	id := r.PathValue("id")
	if err := checkItemID("id", id); err != nil {
		return retry.LeaseRef{}, err
	}
	if token == "" {
		return retry.LeaseRef{}, badRequest("lease", "lease is missing: the token claim returned")
	}
	return retry.LeaseRef{ID: id, Token: token}, nil
}

// settled answers a settled lease with the item as it is now.
func (s *Server) settled(w http.ResponseWriter, r *http.Request, id string) error {
	item, err := s.cfg.Retry.Get(r.Context(), id)
	if err != nil {
		return failed("reading an item", blame("id", err))
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
		return failed("succeed of an item", blame("lease", err))
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
		return failed("release of an item", blame("lease", err))
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
	if req.Class == "" {
		return badRequest("class", "class is missing: why the attempt failed, e.g. timeout or not_found")
	}
	if err := s.cfg.Retry.Fail(r.Context(), ref, req.Class, req.Note); err != nil {
		return failed("fail of an item", blame("class", err))
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
		return failed("extending a lease", blame("lease", err))
	}
	writeJSON(w, http.StatusOK, extendResponse{ID: ref.ID, Until: until.UTC()})
	return nil
}

func (s *Server) itemObserve(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := checkItemID("id", id); err != nil {
		return err
	}
	var req observeRequest
	if err := s.decodeOptionalJSON(w, r, &req); err != nil {
		return err
	}
	if req.Boost < 0 {
		return badRequest("boost", "boost must not be negative")
	}
	p, err := decodePayload("payload", req.Payload)
	if err != nil {
		return err
	}
	res, err := s.cfg.Retry.Observe(r.Context(), id, retry.ObserveParams{
		Boost: req.Boost, AddIfMissing: req.AddIfMissing, Priority: req.Priority, Payload: p})
	if err != nil {
		return failed("observing an item", err)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// itemUnknownOp answers POST /v1/items/{id}/{op} for an op that is none
// of the five, naming them: the mux's plain 404 would not.
func itemUnknownOp(_ http.ResponseWriter, r *http.Request) error {
	return notFound("op", "unknown item operation %q; want succeed, fail, extend, release or observe", r.PathValue("op"))
}

func (s *Server) itemGet(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := checkItemID("id", id); err != nil {
		return err
	}
	item, err := s.cfg.Retry.Get(r.Context(), id)
	if err != nil {
		return failed("reading an item", blame("id", err))
	}
	writeJSON(w, http.StatusOK, item)
	return nil
}

func (s *Server) itemsStats(w http.ResponseWriter, r *http.Request) error {
	st, err := s.cfg.Retry.Stats(r.Context())
	if err != nil {
		return failed("reading queue statistics", err)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
