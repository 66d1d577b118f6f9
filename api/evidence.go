package api

import "time"

// EvidenceRequest is the body of POST /v1/evidence: one source's check of
// one subject.
type EvidenceRequest struct {
	Source  string `json:"source"`
	Subject string `json:"subject"`
	Verdict string `json:"verdict"` // available, unavailable or unknown
	// Reason says why an unknown verdict is unknown: timeout, exhausted,
	// unsupported or error (the default).
	Reason string `json:"reason,omitempty"`
}

// EvidenceRecord is one source's standing verdict; it answers
// POST /v1/evidence.
type EvidenceRecord struct {
	Source      string     `json:"source"`
	Subject     string     `json:"subject"`
	Fingerprint string     `json:"fingerprint"`
	Verdict     string     `json:"verdict"`
	Stored      string     `json:"stored"`
	Reason      string     `json:"reason,omitempty"`
	CheckedAt   *time.Time `json:"checked_at,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
}

// EvidenceSummary answers GET /v1/evidence/{subject}.
type EvidenceSummary struct {
	Subject     string           `json:"subject"`
	Fingerprint string           `json:"fingerprint"`
	Verdict     string           `json:"verdict"`
	Positive    int              `json:"positive"`
	Negative    int              `json:"negative"`
	CheckedAt   *time.Time       `json:"checked_at,omitempty"`
	Sources     []EvidenceRecord `json:"sources"`
}

// PolicyRequest is the body of POST /v1/evidence/policy. Fingerprint is a
// pointer because missing is an error; "" is the unnamed policy.
type PolicyRequest struct {
	Fingerprint *string `json:"fingerprint"`
}

// PolicyResult answers POST /v1/evidence/policy.
type PolicyResult struct {
	Fingerprint string `json:"fingerprint"`
	// Deleted counts the positive verdicts of other fingerprints that were
	// dropped.
	Deleted int64 `json:"deleted"`
}
