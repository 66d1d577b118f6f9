package server

import (
	"net/http"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/evidence"
)

func newRecordView(r evidence.Record) api.EvidenceRecord {
	return api.EvidenceRecord{Source: r.Source, Subject: r.Subject, Fingerprint: r.Fingerprint,
		Verdict: r.Verdict.String(), Stored: r.Stored.String(), Reason: string(r.Reason),
		CheckedAt: timePtr(r.CheckedAt), ExpiresAt: timePtr(r.ExpiresAt)}
}

func parseVerdict(v string) (evidence.Verdict, bool) {
	for _, x := range []evidence.Verdict{evidence.Available, evidence.Unavailable, evidence.Unknown} {
		if v == x.String() {
			return x, true
		}
	}
	return 0, false
}

func (s *Server) evidenceRecord(w http.ResponseWriter, r *http.Request) error {
	var req api.EvidenceRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	check, err := evidenceCheck(&req)
	if err != nil {
		return err
	}
	b := s.cfg.Evidence
	if err := b.Record(r.Context(), check); err != nil {
		return failed("recording evidence", err)
	}
	s.metrics.verdicts.WithLabelValues(check.Verdict.String()).Inc()
	// The standing verdict, which an unknown never overwrites, is what the
	// caller wants to know next.
	rec, err := b.Get(r.Context(), req.Source, req.Subject)
	if err != nil {
		return failed("reading evidence", err)
	}
	writeJSON(w, http.StatusOK, newRecordView(rec))
	return nil
}

// evidenceCheck turns a POST /v1/evidence body into the check it
// records; the book judges the rest.
func evidenceCheck(req *api.EvidenceRequest) (evidence.Check, error) {
	verdict, ok := parseVerdict(req.Verdict)
	if !ok {
		return evidence.Check{}, badRequest("verdict", "verdict %q: want available, unavailable or unknown", req.Verdict)
	}
	return evidence.Check{Source: req.Source, Subject: req.Subject, Verdict: verdict, Reason: evidence.Reason(req.Reason)}, nil
}

func (s *Server) evidenceGet(w http.ResponseWriter, r *http.Request) error {
	subject := r.PathValue("subject")
	b := s.cfg.Evidence
	sum, recs, err := b.Summarize(r.Context(), subject)
	if err != nil {
		return failed("reading evidence", err)
	}
	v := api.EvidenceSummary{Subject: subject, Fingerprint: b.CurrentFingerprint(), Verdict: sum.Verdict.String(),
		Positive: sum.Positive, Negative: sum.Negative, CheckedAt: timePtr(sum.CheckedAt), Sources: make([]api.EvidenceRecord, 0, len(recs))}
	for _, rec := range recs {
		v.Sources = append(v.Sources, newRecordView(rec))
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) evidencePolicy(w http.ResponseWriter, r *http.Request) error {
	var req api.PolicyRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Fingerprint == nil {
		return badRequest("fingerprint", "fingerprint is missing (\"\" is the unnamed policy)")
	}
	n, err := s.cfg.Evidence.InvalidatePolicy(r.Context(), *req.Fingerprint)
	if err != nil {
		return failed("switching the evidence policy", err)
	}
	s.log.Info("server: evidence policy switched; positives of other policies dropped", "deleted", n)
	writeJSON(w, http.StatusOK, api.PolicyResult{Fingerprint: *req.Fingerprint, Deleted: n})
	return nil
}
