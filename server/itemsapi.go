package server

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// maxAddBatch bounds one POST /v1/items. The body limit bounds it too, but
// a count is a clearer message than a byte figure.
const maxAddBatch = 10_000

func (s *Server) needRetry(w http.ResponseWriter) bool {
	if s.cfg.Retry == nil {
		writeError(w, &apiError{Status: http.StatusNotImplemented, Message: "server: this daemon has no retry scheduler configured"})
		return false
	}
	return true
}

// retryError maps the scheduler's errors onto the API. field names what a
// rejected input most likely was, for the ErrInvalid case.
func (s *Server) retryError(w http.ResponseWriter, doing, field string, err error) {
	switch {
	case errors.Is(err, retry.ErrLeaseLost):
		writeError(w, &apiError{Status: http.StatusConflict, Field: "lease",
			Message: "server: lease lost: the item was claimed again or settled another way; drop this work"})
	case errors.Is(err, retry.ErrNotFound):
		writeError(w, notFound("id", "no such item"))
	case errors.Is(err, retry.ErrInvalid):
		if strings.Contains(err.Error(), "lease token") {
			field = "lease"
		}
		writeError(w, badRequest(field, "%s", strings.TrimPrefix(err.Error(), "retry: ")))
	default:
		s.internalError(w, doing, err)
	}
}

// checkItemID is the part of the scheduler's id rules that can be checked
// before any work, so that a batch with one bad id is refused whole.
func checkItemID(field, id string) *apiError {
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
func decodePayload(field, p string) ([]byte, *apiError) {
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

func (s *Server) itemsAdd(w http.ResponseWriter, r *http.Request) {
	if !s.needRetry(w) {
		return
	}
	var req addRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case req.Items == nil:
		writeError(w, badRequest("items", "items is missing: {\"items\":[{\"id\":\"...\"}]}"))
		return
	case len(req.Items) == 0:
		writeError(w, badRequest("items", "items is empty"))
		return
	case len(req.Items) > maxAddBatch:
		writeError(w, badRequest("items", "%d items in one request; at most %d", len(req.Items), maxAddBatch))
		return
	}
	items := make([]retry.NewItem, len(req.Items))
	for i, it := range req.Items {
		if e := checkItemID(fmt.Sprintf("items[%d].id", i), it.ID); e != nil {
			writeError(w, e)
			return
		}
		if it.Priority > retry.MaxPriority || it.Priority < -retry.MaxPriority {
			writeError(w, badRequest(fmt.Sprintf("items[%d].priority", i), "priority %d is outside ±%d", it.Priority, retry.MaxPriority))
			return
		}
		p, e := decodePayload(fmt.Sprintf("items[%d].payload", i), it.Payload)
		if e != nil {
			writeError(w, e)
			return
		}
		items[i] = retry.NewItem{ID: it.ID, Priority: it.Priority, Payload: p, NotBefore: it.NotBefore}
	}
	res, err := s.cfg.Retry.Add(r.Context(), items...)
	if err != nil {
		s.retryError(w, "adding items", "items", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
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
func leaseDuration(field string, secs *float64) (time.Duration, *apiError) {
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

func (s *Server) itemsClaim(w http.ResponseWriter, r *http.Request) {
	if !s.needRetry(w) {
		return
	}
	var req claimRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.N == nil {
		writeError(w, badRequest("n", "n is missing: how many items to claim, 1 to %d", retry.MaxClaim))
		return
	}
	if *req.N < 1 || *req.N > retry.MaxClaim {
		writeError(w, badRequest("n", "n %d is outside 1 to %d", *req.N, retry.MaxClaim))
		return
	}
	lease, e := leaseDuration("lease_seconds", req.LeaseSeconds)
	if e != nil {
		writeError(w, e)
		return
	}
	leases, err := s.cfg.Retry.Claim(r.Context(), retry.ClaimParams{N: *req.N, Lease: lease, Worker: req.Worker})
	if err != nil {
		s.retryError(w, "claiming items", "worker", err)
		return
	}
	if leases == nil {
		leases = []retry.Lease{}
	}
	writeJSON(w, http.StatusOK, claimResponse{Leases: leases})
}

// itemOpRequest is the body of every POST /v1/items/{id}/{op}. Which
// fields an operation takes is checked per operation, so that a field
// sent to the wrong one (a class on succeed) is an error, not ignored.
type itemOpRequest struct {
	Lease        string   `json:"lease"`
	Class        string   `json:"class"`
	Note         string   `json:"note"`
	LeaseSeconds *float64 `json:"lease_seconds"`
	Boost        int      `json:"boost"`
	AddIfMissing bool     `json:"add_if_missing"`
	Priority     int      `json:"priority"`
	Payload      string   `json:"payload"`
}

// opFields lists the fields each operation accepts.
var opFields = map[string][]string{
	"succeed": {"lease"},
	"release": {"lease"},
	"fail":    {"lease", "class", "note"},
	"extend":  {"lease", "lease_seconds"},
	"observe": {"boost", "add_if_missing", "priority", "payload"},
}

// present names the fields of req that are set.
func (req *itemOpRequest) present() []string {
	var f []string
	add := func(name string, set bool) {
		if set {
			f = append(f, name)
		}
	}
	add("lease", req.Lease != "")
	add("class", req.Class != "")
	add("note", req.Note != "")
	add("lease_seconds", req.LeaseSeconds != nil)
	add("boost", req.Boost != 0)
	add("add_if_missing", req.AddIfMissing)
	add("priority", req.Priority != 0)
	add("payload", req.Payload != "")
	return f
}

type extendResponse struct {
	ID    string    `json:"id"`
	Until time.Time `json:"until"`
}

func (s *Server) itemOp(w http.ResponseWriter, r *http.Request) {
	if !s.needRetry(w) {
		return
	}
	id, op := r.PathValue("id"), r.PathValue("op")
	allowed, ok := opFields[op]
	if !ok {
		writeError(w, notFound("op", "unknown item operation %q; want succeed, fail, extend, release or observe", op))
		return
	}
	if e := checkItemID("id", id); e != nil {
		writeError(w, e)
		return
	}
	var req itemOpRequest
	var e *apiError
	if op == "observe" {
		e = decodeOptionalJSON(w, r, s.cfg.MaxBodyBytes, &req)
	} else {
		e = decodeJSON(w, r, s.cfg.MaxBodyBytes, &req)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	for _, f := range req.present() {
		found := false
		for _, a := range allowed {
			found = found || a == f
		}
		if !found {
			writeError(w, badRequest(f, "%s does not go with %s (it takes %s)", f, op, strings.Join(allowed, ", ")))
			return
		}
	}
	if op != "observe" && req.Lease == "" {
		writeError(w, badRequest("lease", "lease is missing: the token claim returned"))
		return
	}
	ref := retry.LeaseRef{ID: id, Token: req.Lease}
	ctx := r.Context()
	var err error
	switch op {
	case "succeed":
		err = s.cfg.Retry.Succeed(ctx, ref)
	case "release":
		err = s.cfg.Retry.Release(ctx, ref)
	case "fail":
		if req.Class == "" {
			writeError(w, badRequest("class", "class is missing: why the attempt failed, e.g. timeout or not_found"))
			return
		}
		err = s.cfg.Retry.Fail(ctx, ref, req.Class, req.Note)
	case "extend":
		d, e := leaseDuration("lease_seconds", req.LeaseSeconds)
		if e != nil {
			writeError(w, e)
			return
		}
		until, err := s.cfg.Retry.Extend(ctx, ref, d)
		if err != nil {
			s.retryError(w, "extending a lease", "lease", err)
			return
		}
		writeJSON(w, http.StatusOK, extendResponse{ID: id, Until: until.UTC()})
		return
	case "observe":
		if req.Boost < 0 {
			writeError(w, badRequest("boost", "boost must not be negative"))
			return
		}
		p, e := decodePayload("payload", req.Payload)
		if e != nil {
			writeError(w, e)
			return
		}
		res, err := s.cfg.Retry.Observe(ctx, id, retry.ObserveParams{
			Boost: req.Boost, AddIfMissing: req.AddIfMissing, Priority: req.Priority, Payload: p})
		if err != nil {
			s.retryError(w, "observing an item", "", err)
			return
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	if err != nil {
		field := "lease"
		if op == "fail" {
			field = "class"
		}
		s.retryError(w, op+" of an item", field, err)
		return
	}
	item, err := s.cfg.Retry.Get(ctx, id)
	if err != nil {
		s.retryError(w, "reading an item", "id", err)
		return
	}
	writeJSON(w, http.StatusOK, item)
}

func (s *Server) itemGet(w http.ResponseWriter, r *http.Request) {
	if !s.needRetry(w) {
		return
	}
	id := r.PathValue("id")
	if e := checkItemID("id", id); e != nil {
		writeError(w, e)
		return
	}
	item, err := s.cfg.Retry.Get(r.Context(), id)
	if err != nil {
		s.retryError(w, "reading an item", "id", err)
		return
	}
	writeJSON(w, http.StatusOK, item)
}

func (s *Server) itemsStats(w http.ResponseWriter, r *http.Request) {
	if !s.needRetry(w) {
		return
	}
	st, err := s.cfg.Retry.Stats(r.Context())
	if err != nil {
		s.internalError(w, "reading queue statistics", err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
