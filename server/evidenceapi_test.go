package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/evidence"
)

func TestEvidenceRecordSummarizeAndPolicy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	subject := "Some.Show/S01E02" // a slash travels escaped in the path
	path := "/v1/evidence/" + url.PathEscape(subject)

	var rec api.EvidenceRecord
	decodeInto(t, f.do("POST", "/v1/evidence", map[string]any{"source": "idx-a", "subject": subject, "verdict": "available"}), &rec)
	if rec.Verdict != "available" || rec.Stored != "available" || rec.ExpiresAt == nil || !rec.ExpiresAt.Equal(f.clock.Now().Add(6*time.Hour)) {
		t.Fatalf("recorded: %+v", rec)
	}
	// An unknown (a timeout) never overwrites what a real check found.
	decodeInto(t, f.do("POST", "/v1/evidence", map[string]any{"source": "idx-a", "subject": subject, "verdict": "unknown", "reason": "timeout"}), &rec)
	if rec.Verdict != "available" {
		t.Fatalf("an unknown replaced a positive: %+v", rec)
	}
	decodeInto(t, f.do("POST", "/v1/evidence", map[string]any{"source": "idx-b", "subject": subject, "verdict": "unavailable"}), &rec)

	var sum api.EvidenceSummary
	decodeInto(t, f.do("GET", path, nil), &sum)
	if sum.Subject != subject || sum.Verdict != "available" || sum.Positive != 1 || sum.Negative != 1 || len(sum.Sources) != 2 {
		t.Fatalf("summary: %+v", sum)
	}
	// One source failing does not hide the subject; once the positive
	// expires, the real negative stands.
	f.clock.Advance(6*time.Hour + time.Second)
	decodeInto(t, f.do("GET", path, nil), &sum)
	if sum.Verdict != "unavailable" || sum.Positive != 0 {
		t.Fatalf("after the positive expired: %+v", sum)
	}

	// A new policy: old positives go, and nothing old is visible.
	decodeInto(t, f.do("POST", "/v1/evidence", map[string]any{"source": "idx-a", "subject": subject, "verdict": "available"}), &rec)
	var pol api.PolicyResult
	decodeInto(t, f.do("POST", "/v1/evidence/policy", map[string]any{"fingerprint": "quality=1080p"}), &pol)
	if pol.Fingerprint != "quality=1080p" || pol.Deleted != 1 {
		t.Fatalf("policy switch: %+v", pol)
	}
	decodeInto(t, f.do("GET", path, nil), &sum)
	if sum.Verdict != "unknown" || sum.Fingerprint != "quality=1080p" || sum.Positive+sum.Negative != 0 {
		t.Fatalf("after the policy switch: %+v", sum)
	}
	decodeInto(t, f.do("POST", "/v1/evidence", map[string]any{"source": "idx-a", "subject": subject, "verdict": "available"}), &rec)
	if rec.Fingerprint != "quality=1080p" {
		t.Fatalf("recorded under %q, not the current policy", rec.Fingerprint)
	}

	// The status page counts from the book's computed set.
	if err := f.s.cfg.Evidence.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	var st statusReport
	decodeInto(t, f.do("GET", "/v1/status", nil), &st)
	if st.Evidence == nil || !st.Evidence.Known || st.Evidence.Available != 1 || st.Evidence.Fingerprint != "quality=1080p" {
		t.Fatalf("status evidence: %+v", st.Evidence)
	}
	if rep := f.dashboardReport(); rep.Evidence == nil || rep.Evidence.Available != 1 {
		t.Error("the status page lacks the evidence count")
	}
	m := string(f.do("GET", "/metrics", nil).body)
	for _, want := range []string{`hostguard_evidence_subjects{verdict="available"} 1`, `hostguard_evidence_verdicts_total{verdict="available"} 3`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestEvidenceBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	long := strings.Repeat("s", max(evidence.MaxSubjectBytes, evidence.MaxFingerprintBytes)+1)
	cases := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"no source", "POST", "/v1/evidence", `{"subject":"x","verdict":"available"}`, 400, "source"},
		{"no subject", "POST", "/v1/evidence", `{"source":"a","verdict":"available"}`, 400, "subject"},
		{"long subject", "POST", "/v1/evidence", `{"source":"a","subject":"` + long + `","verdict":"available"}`, 400, "subject"},
		{"no verdict", "POST", "/v1/evidence", `{"source":"a","subject":"x"}`, 400, "verdict"},
		{"bad verdict", "POST", "/v1/evidence", `{"source":"a","subject":"x","verdict":"maybe"}`, 400, "verdict"},
		{"reason with a verdict", "POST", "/v1/evidence", `{"source":"a","subject":"x","verdict":"available","reason":"timeout"}`, 400, "reason"},
		{"unknown reason", "POST", "/v1/evidence", `{"source":"a","subject":"x","verdict":"unknown","reason":"bored"}`, 400, "reason"},
		{"unknown field", "POST", "/v1/evidence", `{"source":"a","subject":"x","verdict":"unknown","when":1}`, 400, "when"},
		{"get long subject", "GET", "/v1/evidence/" + long, nil, 400, "subject"},
		{"policy missing", "POST", "/v1/evidence/policy", `{}`, 400, "fingerprint"},
		{"policy not a string", "POST", "/v1/evidence/policy", `{"fingerprint":7}`, 400, "fingerprint"},
		{"policy too long", "POST", "/v1/evidence/policy", `{"fingerprint":"` + long + `"}`, 400, "fingerprint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, f.do(c.method, c.path, c.body), c.status, c.field)
		})
	}
	var sum api.EvidenceSummary
	decodeInto(t, f.do("GET", "/v1/evidence/x", nil), &sum)
	if sum.Verdict != "unknown" || len(sum.Sources) != 0 || sum.Fingerprint != "" {
		t.Fatalf("bad requests recorded something: %+v", sum)
	}
}

func TestEvidenceRoutesWithoutABook(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Evidence = nil; c.FeedStore = nil })
	expectError(t, f.do("POST", "/v1/evidence", `{"source":"a","subject":"x","verdict":"available"}`), http.StatusNotImplemented, "")
	expectError(t, f.do("GET", "/v1/evidence/x", nil), http.StatusNotImplemented, "")
	expectError(t, f.do("GET", "/v1/feeds", nil), http.StatusNotImplemented, "")
}
