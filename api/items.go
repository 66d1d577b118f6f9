package api

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// The retry scheduler's own types are the bodies of the item routes.
type (
	// NewItem is one item of POST /v1/items. Its payload is base64, as
	// encoding/json writes []byte.
	NewItem = retry.NewItem
	// AddResult answers POST /v1/items.
	AddResult = retry.AddResult
	// Lease is one claimed item of POST /v1/items/claim.
	Lease = retry.Lease
	// Item answers GET /v1/items/{id} and the settling operations.
	Item = retry.Item
	// ItemPage answers GET /v1/items.
	ItemPage = retry.ListPage
	// ObserveRequest is the body of POST /v1/items/{id}/observe; the
	// body may be empty.
	ObserveRequest = retry.ObserveParams
	// ObserveResult answers POST /v1/items/{id}/observe, and is one
	// result of POST /v1/items/observe.
	ObserveResult = retry.ObserveResult
	// DueNowResult answers POST /v1/items/{id}/due-now.
	DueNowResult = retry.DueNowResult
	// DueHistogram is the "due" member of GET /v1/items/stats.
	DueHistogram = retry.DueHistogram
)

// AddRequest is the body of POST /v1/items.
type AddRequest struct {
	Items []NewItem `json:"items"`
}

// ClaimRequest is the body of POST /v1/items/claim. N and LeaseSeconds
// are pointers because missing is an error, not zero.
type ClaimRequest struct {
	N            *int     `json:"n"`
	LeaseSeconds *float64 `json:"lease_seconds"`
	Worker       string   `json:"worker,omitempty"`
	// WaitSeconds makes the claim a long poll: it answers as soon as work
	// is due, or with no leases after this long.
	WaitSeconds *float64 `json:"wait_seconds,omitempty"`
}

// ClaimResponse answers POST /v1/items/claim; Leases is empty, not null,
// when nothing was due.
type ClaimResponse struct {
	Leases []Lease `json:"leases"`
}

// The five operations on one item each have a body of their own, so that
// a field sent to the wrong one (a class on succeed) is an unknown field,
// not ignored.

// LeaseRequest is the body of POST /v1/items/{id}/succeed and .../release.
type LeaseRequest struct {
	Lease string `json:"lease"`
}

// FailRequest is the body of POST /v1/items/{id}/fail.
type FailRequest struct {
	Lease string `json:"lease"`
	Class string `json:"class"`
	Note  string `json:"note,omitempty"`
	// Source names where the failure's evidence came from (retry.Outcome).
	Source string `json:"source,omitempty"`
	Host   string `json:"host,omitempty"`
}

// ExtendRequest is the body of POST /v1/items/{id}/extend.
type ExtendRequest struct {
	Lease        string   `json:"lease"`
	LeaseSeconds *float64 `json:"lease_seconds"`
}

// ExtendResponse answers POST /v1/items/{id}/extend.
type ExtendResponse struct {
	ID    string    `json:"id"`
	Until time.Time `json:"until"`
}

// ObserveBatchRequest is the body of POST /v1/items/observe.
type ObserveBatchRequest struct {
	IDs          []string `json:"ids"`
	Boost        int      `json:"boost,omitempty"`
	AddIfMissing bool     `json:"add_if_missing,omitempty"`
	Priority     int      `json:"priority,omitempty"`
	Source       string   `json:"source,omitempty"`
}

// ObserveBatchResponse answers POST /v1/items/observe, one result an id.
type ObserveBatchResponse struct {
	Results []ObserveResult `json:"results"`
}

// SettleOutcome is one lease's result in POST /v1/items/settle. Op is
// succeed, fail or release; Class, Note, Source and Host go with fail only.
type SettleOutcome struct {
	ID     string `json:"id"`
	Lease  string `json:"lease"`
	Op     string `json:"op"`
	Class  string `json:"class,omitempty"`
	Note   string `json:"note,omitempty"`
	Source string `json:"source,omitempty"`
	Host   string `json:"host,omitempty"`
}

// SettleRequest is the body of POST /v1/items/settle.
type SettleRequest struct {
	Outcomes []SettleOutcome `json:"outcomes"`
}

// The errors a SettleResult may carry.
const (
	SettleLeaseLost = "lease_lost"
	SettleNotFound  = "not_found"
	SettleInvalid   = "invalid"
)

// SettleResult is one outcome's fate: ok, or why not. Lost and not-found
// outcomes are per item, not errors of the request, so the batch answers
// 200 and says which items the worker must drop.
type SettleResult struct {
	ID    string `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"` // SettleLeaseLost, SettleNotFound or SettleInvalid
	// Message says what was wrong with an invalid outcome.
	Message string `json:"message,omitempty"`
}

// SettleResponse answers POST /v1/items/settle, one result an outcome, in
// their order.
type SettleResponse struct {
	Results []SettleResult `json:"results"`
}

// QueueStats is the retry queue's statistics as the wire has them: it
// encodes as retry.Stats does, and decodes what that wrote, the lag in
// seconds included, which retry.Stats alone would drop.
type QueueStats struct {
	retry.Stats
}

// UnmarshalJSON reads what retry.Stats.MarshalJSON writes.
func (q *QueueStats) UnmarshalJSON(b []byte) error {
	type plain retry.Stats
	var st struct {
		plain
		Lag float64 `json:"oldest_due_lag_seconds"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	q.Stats = retry.Stats(st.plain)
	q.Stats.OldestDueLag = time.Duration(st.Lag * float64(time.Second))
	return nil
}

// ItemsStats answers GET /v1/items/stats: the queue's statistics and,
// under "due", the due histogram.
type ItemsStats struct {
	QueueStats
	Due DueHistogram
}

// MarshalJSON adds "due" to the statistics' own encoding, which
// embedding cannot do: Stats has a MarshalJSON of its own.
func (v ItemsStats) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(v.Stats)
	if err != nil {
		return nil, err
	}
	d, err := json.Marshal(v.Due)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("}"))
	b = append(b, `,"due":`...)
	b = append(b, d...)
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *ItemsStats) UnmarshalJSON(b []byte) error {
	var due struct {
		Due DueHistogram `json:"due"`
	}
	if err := json.Unmarshal(b, &due); err != nil {
		return err
	}
	v.Due = due.Due
	return v.QueueStats.UnmarshalJSON(b)
}
