package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/retry"
)

// TestBadJSONOverTheWire sends what encoding/json would let through to a
// real listener: every body is refused with 400, the path of the value to
// blame, and no change.
func TestBadJSONOverTheWire(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cases := []struct {
		name, method, path, body string
		field                    string
		says                     string // a part of the message
	}{
		{"null body", "POST", "/v1/guard/acquire", `null`, "", "request body must be a JSON object, not null"},
		{"null for an optional body", "PUT", "/v1/budget/sources/x", `null`, "", "not null"},
		{"array body", "POST", "/v1/budget/pause", `[]`, "", "request body must be a JSON object, not array"},
		{"case-variant key", "POST", "/v1/guard/acquire", `{"URL":"http://a.example"}`, "URL", `did you mean \"url\"`},
		{"case-variant key in an array", "POST", "/v1/items", `{"items":[{"ID":"a"}]}`, "items[0].ID", `did you mean \"id\"`},
		{"duplicate key", "POST", "/v1/guard/acquire", `{"url":"http://a.example","url":"http://b.example"}`, "url", "duplicate key"},
		{"duplicate key in an array", "POST", "/v1/items/observe", `{"ids":["a"],"boost":1,"boost":2}`, "boost", "duplicate key"},
		{"error inside an array", "POST", "/v1/items", `{"items":[{"id":"a"},{"id":"b"},{"id":"c"},{"id":7}]}`, "items[3].id", "must be a string, not number"},
		{"unknown field inside an array", "POST", "/v1/items/settle",
			`{"outcomes":[{"id":"a","lease":"1","op":"succeed"},{"id":"b","lease":"1","op":"succeed","reason":"x"}]}`, "outcomes[1].reason", "unknown field"},
		{"raw invalid UTF-8", "POST", "/v1/guard/acquire", "{\"url\":\"http://a.example/\xff\"}", "url", "not valid UTF-8"},
		{"lone surrogate", "POST", "/v1/evidence", `{"source":"a","subject":"\udc00","verdict":"available"}`, "subject", "unpaired surrogate"},
		{"trailing data", "POST", "/v1/guard/acquire", `{"url":"http://a.example"} {}`, "", "data after the JSON value"},
		{"truncated", "POST", "/v1/guard/acquire", `{"url":`, "", "malformed JSON at byte 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := f.do(c.method, c.path, c.body)
			expectError(t, a, http.StatusBadRequest, c.field)
			if msg := string(a.body); !strings.Contains(msg, c.says) {
				t.Errorf("message %s does not say %q", msg, c.says)
			}
		})
	}
	// None of it reached a store or the guard.
	var st retry.Stats
	decodeInto(t, f.do("GET", "/v1/items/stats", nil), &st)
	if st.Total != 0 {
		t.Errorf("a refused body added items: %+v", st)
	}
	if eps := f.s.guard.Endpoints(); len(eps) != 0 {
		t.Errorf("a refused body reached the guard: %+v", eps)
	}
	var ev api.EvidenceSummary
	decodeInto(t, f.do("GET", "/v1/evidence/a", nil), &ev)
	if len(ev.Sources) != 0 {
		t.Errorf("a refused body recorded evidence: %+v", ev)
	}
}
