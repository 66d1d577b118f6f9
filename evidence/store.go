package evidence

import (
	"context"
	"time"
)

// Store is the durable state a Book needs. store/sqlite and store/postgres
// implement it; its methods are prefixed with the capability's name so that
// one store type can serve every capability.
type Store interface {
	// EvidenceRecord stores one verdict under (Fingerprint, Subject,
	// Source). An existing row is replaced only by a check at least as new,
	// and an Unknown never replaces Available or Unavailable. After the
	// write, if the table holds more than MaxRows rows, up to TrimBatch of
	// the oldest rows (by checked time) are deleted.
	EvidenceRecord(ctx context.Context, p StoreRecordParams) error
	// EvidenceGet returns the stored row for one key; ok is false if there
	// is none.
	EvidenceGet(ctx context.Context, k Key) (row Row, ok bool, err error)
	// EvidenceSubject returns every row of one subject under one
	// fingerprint, in source order.
	EvidenceSubject(ctx context.Context, fingerprint, subject string) ([]Row, error)
	// EvidenceSummaries returns, for every subject under Fingerprint that
	// has a positive checked after PositiveSince or a negative checked after
	// NegativeSince, how many sources hold each. Subjects with neither are
	// left out.
	EvidenceSummaries(ctx context.Context, p StoreSummariesParams) ([]SummaryRow, error)
	// EvidenceInvalidate deletes every Available row whose fingerprint is
	// not Keep and returns how many it deleted.
	EvidenceInvalidate(ctx context.Context, keep string) (int64, error)
	// EvidencePolicy returns the stored current policy, shared by every
	// node on the store; Set is false when none was ever stored.
	EvidencePolicy(ctx context.Context) (StorePolicyResult, error)
	// EvidenceSetPolicy makes p.Fingerprint the stored current policy and,
	// in the same transaction, deletes every Available row whose
	// fingerprint is another (as EvidenceInvalidate does). It reports
	// whether the stored policy changed and how many rows it deleted.
	EvidenceSetPolicy(ctx context.Context, p StoreSetPolicyParams) (StoreSetPolicyResult, error)
	// EvidencePrune deletes up to Batch of the oldest rows while the table
	// holds more than MaxRows, and returns how many it deleted.
	EvidencePrune(ctx context.Context, p StorePruneParams) (int64, error)
	// EvidenceCount returns how many rows the table holds.
	EvidenceCount(ctx context.Context) (int64, error)
}

// Key names one verdict row.
type Key struct {
	Fingerprint, Subject, Source string
}

// Row is one stored verdict.
type Row struct {
	Key
	Verdict   Verdict
	Reason    Reason
	CheckedAt time.Time
}

// StoreRecordParams is the input of Store.EvidenceRecord.
type StoreRecordParams struct {
	Row
	// MaxRows is the table's cap; 0 means no cap.
	MaxRows int
	// TrimBatch bounds how many rows one write may delete to restore the
	// cap. Deleting a few more rows than were added keeps the table at its
	// cap while every write stays cheap.
	TrimBatch int
}

// StoreSummariesParams is the input of Store.EvidenceSummaries.
type StoreSummariesParams struct {
	Fingerprint   string
	PositiveSince time.Time
	NegativeSince time.Time
}

// SummaryRow is one subject's counts from Store.EvidenceSummaries.
type SummaryRow struct {
	Subject   string
	Positive  int
	Negative  int
	CheckedAt time.Time // newest counted check
}

// StorePruneParams is the input of Store.EvidencePrune.
type StorePruneParams struct {
	MaxRows int
	Batch   int
}

// StorePolicyResult is the output of Store.EvidencePolicy.
type StorePolicyResult struct {
	// Set is false when no policy was ever stored; Fingerprint is then "".
	Set         bool
	Fingerprint string
	// UpdatedAt is when the policy was last stored (zero when not Set).
	UpdatedAt time.Time
}

// StoreSetPolicyParams is the input of Store.EvidenceSetPolicy.
type StoreSetPolicyParams struct {
	Fingerprint string
	Now         time.Time
}

// StoreSetPolicyResult is the output of Store.EvidenceSetPolicy.
type StoreSetPolicyResult struct {
	// Changed is true when the stored policy was another one, or none.
	Changed bool
	// Deleted counts the positives of other fingerprints deleted.
	Deleted int64
}
