package client

import (
	"context"
	"net/http"

	"github.com/hostguard/hostguard/api"
)

// Evidence is the evidence book: sources' verdicts on subjects.
type Evidence struct{ c *Client }

// Record records one source's check of a subject and returns the source's
// standing verdict, which an unknown never overwrites.
func (e *Evidence) Record(ctx context.Context, check api.EvidenceRequest) (api.EvidenceRecord, error) {
	var res api.EvidenceRecord
	err := e.c.call(ctx, http.MethodPost, "/v1/evidence", nil, check, &res, routePlain)
	return res, err
}

// Get returns a subject's summary and each source's standing verdict.
func (e *Evidence) Get(ctx context.Context, subject string) (api.EvidenceSummary, error) {
	var res api.EvidenceSummary
	err := e.c.call(ctx, http.MethodGet, "/v1/evidence/"+seg(subject), nil, nil, &res, routePlain)
	return res, err
}

// SwitchPolicy makes fingerprint the current policy ("" is the unnamed
// one) and drops the positive verdicts of other policies.
func (e *Evidence) SwitchPolicy(ctx context.Context, fingerprint string) (api.PolicyResult, error) {
	var res api.PolicyResult
	err := e.c.call(ctx, http.MethodPost, "/v1/evidence/policy", nil, api.PolicyRequest{Fingerprint: &fingerprint}, &res, routePlain)
	return res, err
}
