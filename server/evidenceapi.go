package server

import (
	"net/http"
	"time"

	"github.com/hostguard/hostguard/evidence"
)

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

func parseVerdict(v string) (evidence.Verdict, bool) {
	for _, x := range []evidence.Verdict{evidence.Available, evidence.Unavailable, evidence.Unknown} {
		if v == x.String() {
			return x, true
		}
	}
	return 0, false
}

func (s *Server) evidenceRecord(w http.ResponseWriter, r *http.Request) error {
	var req evidenceRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	check, err := req.check()
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

// check turns a POST /v1/evidence body into the check it records; the
// book judges the rest.
func (req *evidenceRequest) check() (evidence.Check, error) {
	verdict, ok := parseVerdict(req.Verdict)
	if !ok {
		return evidence.Check{}, badRequest("verdict", "verdict %q: want available, unavailable or unknown", req.Verdict)
	}
	return evidence.Check{Source: req.Source, Subject: req.Subject, Verdict: verdict, Reason: evidence.Reason(req.Reason)}, nil
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

func (s *Server) evidenceGet(w http.ResponseWriter, r *http.Request) error {
	subject := r.PathValue("subject")
	b := s.cfg.Evidence
	sum, recs, err := b.Summarize(r.Context(), subject)
	if err != nil {
		return failed("reading evidence", err)
	}
	v := summaryView{Subject: subject, Fingerprint: b.CurrentFingerprint(), Verdict: sum.Verdict.String(),
		Positive: sum.Positive, Negative: sum.Negative, CheckedAt: timePtr(sum.CheckedAt), Sources: make([]recordView, 0, len(recs))}
	for _, rec := range recs {
		v.Sources = append(v.Sources, newRecordView(rec))
	}
	writeJSON(w, http.StatusOK, v)
	return nil
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

func (s *Server) evidencePolicy(w http.ResponseWriter, r *http.Request) error {
	var req policyRequest
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
	writeJSON(w, http.StatusOK, policyResponse{Fingerprint: *req.Fingerprint, Deleted: n})
	return nil
}
