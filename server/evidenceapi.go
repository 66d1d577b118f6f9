package server

import (
	"net/http"
	"time"

	"github.com/hostguard/hostguard/evidence"
)

// maxEvidenceKey mirrors the evidence package's bound on sources, subjects
// and fingerprints, so that the API can name the field at fault.
const maxEvidenceKey = 1024

func (s *Server) needEvidence(w http.ResponseWriter) bool {
	if s.cfg.Evidence == nil {
		writeError(w, &apiError{Status: http.StatusNotImplemented, Message: "server: this daemon has no evidence book configured"})
		return false
	}
	return true
}

type evidenceRequest struct {
	Source  string `json:"source"`
	Subject string `json:"subject"`
	Verdict string `json:"verdict"`
	// Reason says why an unknown verdict is unknown: timeout, exhausted,
	// unsupported or error (the default).
	Reason string `json:"reason"`
}

// recordView is one source's standing verdict.
type recordView struct {
	Source      string     `json:"source"`
	Subject     string     `json:"subject"`
	Fingerprint string     `json:"fingerprint"`
	Verdict     string     `json:"verdict"`
	Stored      string     `json:"stored"`
	Reason      string     `json:"reason,omitempty"`
	CheckedAt   *time.Time `json:"checked_at,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
}

func newRecordView(r evidence.Record) recordView {
	return recordView{Source: r.Source, Subject: r.Subject, Fingerprint: r.Fingerprint,
		Verdict: r.Verdict.String(), Stored: r.Stored.String(), Reason: string(r.Reason),
		CheckedAt: timePtr(r.CheckedAt), ExpiresAt: timePtr(r.ExpiresAt)}
}

func checkEvidenceKey(field, v string) *apiError {
	switch {
	case v == "":
		return badRequest(field, "%s is missing", field)
	case len(v) > maxEvidenceKey:
		return badRequest(field, "%s is %d bytes, more than %d", field, len(v), maxEvidenceKey)
	}
	return nil
}

func parseVerdict(v string) (evidence.Verdict, bool) {
	for _, x := range []evidence.Verdict{evidence.Available, evidence.Unavailable, evidence.Unknown} {
		if v == x.String() {
			return x, true
		}
	}
	return 0, false
}

func (s *Server) evidenceRecord(w http.ResponseWriter, r *http.Request) {
	if !s.needEvidence(w) {
		return
	}
	var req evidenceRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := checkEvidenceKey("source", req.Source); e != nil {
		writeError(w, e)
		return
	}
	if e := checkEvidenceKey("subject", req.Subject); e != nil {
		writeError(w, e)
		return
	}
	verdict, ok := parseVerdict(req.Verdict)
	if !ok {
		writeError(w, badRequest("verdict", "verdict %q: want available, unavailable or unknown", req.Verdict))
		return
	}
	reason := evidence.Reason(req.Reason)
	switch {
	case reason != "" && verdict != evidence.Unknown:
		writeError(w, badRequest("reason", "only an unknown verdict carries a reason"))
		return
	case reason != "" && reason != evidence.ReasonTimeout && reason != evidence.ReasonExhausted &&
		reason != evidence.ReasonUnsupported && reason != evidence.ReasonError:
		writeError(w, badRequest("reason", "reason %q: want timeout, exhausted, unsupported or error", req.Reason))
		return
	}
	b := s.cfg.Evidence
	if err := b.Record(r.Context(), evidence.Check{Source: req.Source, Subject: req.Subject, Verdict: verdict, Reason: reason}); err != nil {
		s.internalError(w, "recording evidence", err)
		return
	}
	s.metrics.verdicts.WithLabelValues(verdict.String()).Inc()
	// The standing verdict, which an unknown never overwrites, is what the
	// caller wants to know next.
	rec, err := b.Get(r.Context(), req.Source, req.Subject)
	if err != nil {
		s.internalError(w, "reading evidence", err)
		return
	}
	writeJSON(w, http.StatusOK, newRecordView(rec))
}

type summaryView struct {
	Subject     string       `json:"subject"`
	Fingerprint string       `json:"fingerprint"`
	Verdict     string       `json:"verdict"`
	Positive    int          `json:"positive"`
	Negative    int          `json:"negative"`
	CheckedAt   *time.Time   `json:"checked_at,omitempty"`
	Sources     []recordView `json:"sources"`
}

func (s *Server) evidenceGet(w http.ResponseWriter, r *http.Request) {
	if !s.needEvidence(w) {
		return
	}
	subject := r.PathValue("subject")
	if e := checkEvidenceKey("subject", subject); e != nil {
		writeError(w, e)
		return
	}
	b := s.cfg.Evidence
	sum, recs, err := b.Summarize(r.Context(), subject)
	if err != nil {
		s.internalError(w, "reading evidence", err)
		return
	}
	v := summaryView{Subject: subject, Fingerprint: b.CurrentFingerprint(), Verdict: sum.Verdict.String(),
		Positive: sum.Positive, Negative: sum.Negative, CheckedAt: timePtr(sum.CheckedAt), Sources: make([]recordView, 0, len(recs))}
	for _, rec := range recs {
		v.Sources = append(v.Sources, newRecordView(rec))
	}
	writeJSON(w, http.StatusOK, v)
}

type policyRequest struct {
	Fingerprint *string `json:"fingerprint"`
}

type policyResponse struct {
	Fingerprint string `json:"fingerprint"`
	// Deleted counts the positive verdicts of other fingerprints that were
	// dropped.
	Deleted int64 `json:"deleted"`
}

func (s *Server) evidencePolicy(w http.ResponseWriter, r *http.Request) {
	if !s.needEvidence(w) {
		return
	}
	var req policyRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Fingerprint == nil {
		writeError(w, badRequest("fingerprint", "fingerprint is missing (\"\" is the unnamed policy)"))
		return
	}
	if len(*req.Fingerprint) > maxEvidenceKey {
		writeError(w, badRequest("fingerprint", "fingerprint is %d bytes, more than %d", len(*req.Fingerprint), maxEvidenceKey))
		return
	}
	n, err := s.cfg.Evidence.InvalidatePolicy(r.Context(), *req.Fingerprint)
	if err != nil {
		s.internalError(w, "switching the evidence policy", err)
		return
	}
	s.log.Info("server: evidence policy switched; positives of other policies dropped", "deleted", n)
	writeJSON(w, http.StatusOK, policyResponse{Fingerprint: *req.Fingerprint, Deleted: n})
}
