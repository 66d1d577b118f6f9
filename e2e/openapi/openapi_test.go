// Package openapi checks docs/openapi.yaml: against OpenAPI 3.1, against
// the routes the server registers, and against the real daemon, every
// request and answer of a run through each route validated. It lives in
// this test-only module so that the library's go.mod carries no OpenAPI
// validator.
package openapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	validationerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/hostguard/hostguard/e2e/internal/daemon"
	"github.com/hostguard/hostguard/internal/fakeindexer"
	"github.com/hostguard/hostguard/internal/waitfor"
)

// The API's description lives in docs/openapi.yaml; the daemon serves it as
// JSON from server/openapi.json, which is generated from the YAML here so
// that the main module needs no YAML parser.
const (
	openAPIYAML = "../../docs/openapi.yaml"
	openAPIJSON = "../../server/openapi.json"
)

var updateOpenAPI = flag.Bool("update-openapi", false, "rewrite server/openapi.json from docs/openapi.yaml")

// yamlToJSON converts a YAML document to indented JSON, keeping the keys in
// the document's order and expanding aliases.
func yamlToJSON(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeJSONNode(&buf, &doc); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeJSONNode(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: want one YAML document", n.Line)
		}
		return writeJSONNode(buf, n.Content[0])
	case yaml.AliasNode:
		return writeJSONNode(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a mapping key must be a scalar", k.Line)
			}
			kb, _ := json.Marshal(k.Value)
			buf.Write(kb)
			buf.WriteByte(':')
			if err := writeJSONNode(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSONNode(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %v", n.Line, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %v", n.Line, err)
		}
		buf.Write(b)
	default:
		return fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
	}
	return nil
}

// loadSpec reads the generated JSON document and checks that it is the
// YAML's current form.
func loadSpec(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile(openAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	want, err := yamlToJSON(src)
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	if *updateOpenAPI {
		if err := os.WriteFile(openAPIJSON, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(openAPIJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("server/openapi.json is not docs/openapi.yaml's current form; run (cd e2e && go test ./openapi -update-openapi)")
	}
	return got
}

type operation struct{ method, path string }

func (o operation) String() string { return o.method + " " + o.path }

// specOperations lists the document's operations.
func specOperations(t *testing.T, model *v3.Document) []operation {
	t.Helper()
	var ops []operation
	for path, item := range model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			ops = append(ops, operation{strings.ToUpper(method), path})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].String() < ops[j].String() })
	return ops
}

var patternRE = regexp.MustCompile(`^(GET|HEAD|POST|PUT|PATCH|DELETE) (/\S*)$`)

// muxPatterns finds the route patterns the server registers: every string
// literal of the server package that reads "METHOD /path". Reading the
// source rather than the mux keeps the check independent of how the routes
// are registered, as long as each pattern is written out once.
func muxPatterns(t *testing.T) []operation {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("../../server/*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[operation]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if m := patternRE.FindStringSubmatch(s); m != nil {
				p := strings.ReplaceAll(m[2], "{$}", "")
				p = regexp.MustCompile(`\{(\w+)\.\.\.\}`).ReplaceAllString(p, "{$1}")
				if p == "" {
					p = "/"
				}
				seen[operation{m[1], p}] = true
			}
			return true
		})
	}
	var out []operation
	for op := range seen {
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// templateMatch reports whether a document path and a mux pattern can name
// the same request: segment by segment, equal literals or a wildcard on
// either side.
func templateMatch(doc, mux string) bool {
	ds, ms := strings.Split(doc, "/"), strings.Split(mux, "/")
	if len(ds) != len(ms) {
		return false
	}
	wild := func(s string) bool { return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") }
	for i := range ds {
		if ds[i] != ms[i] && !wild(ds[i]) && !wild(ms[i]) {
			return false
		}
	}
	return true
}

func buildModel(t *testing.T, spec []byte) (validator.Validator, *v3.Document) {
	t.Helper()
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("building the OpenAPI model: %v", err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("docs/openapi.yaml: %s", e.Error())
		}
		t.FailNow()
	}
	return v, &model.Model
}

// TestOpenAPIDocument checks the document against OpenAPI 3.1 and against
// the routes the server registers, both ways.
func TestOpenAPIDocument(t *testing.T) {
	spec := loadSpec(t)
	_, model := buildModel(t, spec)
	if model.Version != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", model.Version)
	}
	ops := specOperations(t, model)
	mux := muxPatterns(t)
	if len(mux) < 20 {
		t.Fatalf("found only %d route patterns in server/; has the way routes are registered changed?", len(mux))
	}
	for _, m := range mux {
		found := false
		for _, o := range ops {
			found = found || (o.method == m.method && templateMatch(o.path, m.path))
		}
		if !found {
			t.Errorf("the server routes %s, which docs/openapi.yaml does not describe", m)
		}
	}
	for _, o := range ops {
		found := false
		for _, m := range mux {
			found = found || (o.method == m.method && templateMatch(o.path, m.path))
		}
		if !found {
			t.Errorf("docs/openapi.yaml describes %s, which the server does not route", o)
		}
	}
}

// apiCheck sends requests to a running daemon and validates each request
// and its answer against the document, remembering which operations
// answered which statuses.
type apiCheck struct {
	t     *testing.T
	base  string
	token string
	v     validator.Validator
	model *v3.Document
	hc    *http.Client
	seen  map[operation]map[int]bool
}

// leaseOut is a claimed item as the items API answers it.
type leaseOut struct {
	ID    string `json:"id"`
	Lease string `json:"lease"`
}

type reqOpt struct {
	noToken bool
	// badInput marks a request the daemon is meant to refuse: only the
	// answer is validated, since the request breaks the document on
	// purpose.
	badInput bool
	rawBody  []byte
	header   http.Header
}

func (c *apiCheck) do(method, path string, body any, want int, out any, opt reqOpt) []byte {
	c.t.Helper()
	var raw []byte
	switch {
	case opt.rawBody != nil:
		raw = opt.rawBody
	case body != nil:
		raw, _ = json.Marshal(body)
	}
	mk := func() *http.Request {
		var r io.Reader
		if raw != nil {
			r = bytes.NewReader(raw)
		}
		req, err := http.NewRequest(method, c.base+path, r)
		if err != nil {
			c.t.Fatal(err)
		}
		if raw != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		maps.Copy(req.Header, opt.header)
		if !opt.noToken {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		return req
	}
	resp, err := c.hc.Do(mk())
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, got)
	}
	// Validation reads the bodies, so it gets fresh copies.
	vreq := mk()
	resp.Body = io.NopCloser(bytes.NewReader(got))
	resp.Request = vreq
	var ok bool
	var verrs []error
	// A request without the token breaks the document's security
	// requirement on purpose, like bad input does.
	var ve []*validationerrors.ValidationError
	if opt.badInput || opt.noToken && method+" "+path != "GET /healthz" {
		ok, ve = c.v.ValidateHttpResponse(vreq, resp)
	} else {
		ok, ve = c.v.ValidateHttpRequestResponse(vreq, resp)
	}
	for _, e := range ve {
		verrs = append(verrs, fmt.Errorf("%s: %s", e.Error(), e.Reason))
	}
	if !ok {
		for _, e := range verrs {
			c.t.Errorf("%s %s (%d) against the document: %v\nbody: %s", method, path, resp.StatusCode, e, got)
		}
	}
	_, perrs, tmpl := paths.FindPath(mk(), c.model, nil)
	if tmpl == "" || len(perrs) > 0 {
		c.t.Errorf("%s %s: no operation in the document: %v", method, path, perrs)
	} else {
		op := operation{method, tmpl}
		if c.seen[op] == nil {
			c.seen[op] = map[int]bool{}
		}
		c.seen[op][resp.StatusCode] = true
	}
	if out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, got)
		}
	}
	return got
}

// TestOpenAPIValidation drives the real daemon through every route of the
// document, with a success and an error each where the route has one,
// validating every request and answer.
func TestOpenAPIValidation(t *testing.T) {
	spec := loadSpec(t)
	v, model := buildModel(t, spec)
	bin := daemon.Build(t)
	dir := t.TempDir()
	idx := fakeindexer.New(fakeindexer.Options{APIKey: daemon.IndexerKey})
	t.Cleanup(idx.Close)
	idx.PublishEvery(4, time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC), time.Minute)
	cfg := filepath.Join(dir, "hostguard.json")
	if err := os.WriteFile(cfg, []byte(`{
		"budget": {"sources": [{"name": "films", "owner_daily_limit": 1000, "pace": "0s"}]},
		"feeds": [{"name": "films", "url": "`+idx.URL()+`", "api_key_env": "E2E_INDEXER_KEY", "keep_items": 3}],
		"evidence": {"fingerprint": "spec-policy"}
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const tok = "openapi-test-token"
	d := daemon.Start(t, bin, filepath.Join(dir, "spec.db"), "--config", cfg, "--token", tok)
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	c := &apiCheck{t: t, base: d.API, token: tok, v: v, model: model,
		hc: &http.Client{Transport: tr, Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		seen: map[operation]map[int]bool{}}
	bad := reqOpt{badInput: true}
	none := reqOpt{}

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(time.Second)
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "upstream saw %s %s", r.Method, r.URL.RequestURI())
	}))
	defer upstream.Close()
	deadLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + deadLn.Addr().String()
	deadLn.Close()

	// Probes. /readyz turns 200 once a node holds the leader lease, which
	// on a loaded machine can come a moment after the listener is up; the
	// validated call below must see the ready answer, so wait for it first.
	c.do("GET", "/healthz", nil, 200, nil, reqOpt{noToken: true})
	waitfor.True(t, 15*time.Second, "the daemon to be ready", func() bool {
		resp, err := c.hc.Get(d.API + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	c.do("GET", "/readyz", nil, 200, nil, reqOpt{noToken: true})
	c.do("GET", "/metrics", nil, 200, nil, none)
	c.do("GET", "/metrics", nil, 401, nil, reqOpt{noToken: true})
	c.do("GET", "/", nil, 200, nil, none)
	c.do("GET", "/", nil, 401, nil, reqOpt{noToken: true})
	c.do("GET", "/v1/status", nil, 200, nil, none)
	c.do("GET", "/v1/status", nil, 401, nil, reqOpt{noToken: true})
	// The dashboard's login and logout, as its forms post them.
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {d.API}}
	c.do("POST", "/login", nil, 401, nil, reqOpt{noToken: true, rawBody: []byte("token=wrong"), header: form})
	c.do("POST", "/login", nil, 303, nil, reqOpt{noToken: true, rawBody: []byte("token=" + tok), header: form})
	c.do("POST", "/login", nil, 403, nil, reqOpt{noToken: true, badInput: true, rawBody: []byte("token=" + tok),
		header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
	c.do("POST", "/logout", nil, 303, nil, reqOpt{noToken: true, header: http.Header{"Origin": {d.API}}})
	c.do("POST", "/logout", nil, 403, nil, reqOpt{noToken: true, badInput: true})
	served := c.do("GET", "/v1/openapi.json", nil, 200, nil, none)
	if !bytes.Equal(served, spec) {
		t.Error("GET /v1/openapi.json is not server/openapi.json")
	}
	c.do("GET", "/v1/openapi.json", nil, 401, nil, reqOpt{noToken: true})

	// Guard: a good ticket, bad input, then two failures and a fast-fail.
	var tk struct{ Ticket string }
	c.do("POST", "/v1/guard/acquire", map[string]any{"url": "http://ok.example/a?b=c"}, 200, &tk, none)
	c.do("POST", "/v1/guard/tickets/"+tk.Ticket+"/extend", nil, 200, nil, none)
	c.do("POST", "/v1/guard/tickets/NOT-HEX/extend", nil, 400, nil, bad)
	c.do("POST", "/v1/guard/tickets/"+strings.Repeat("0", 32)+"/extend", nil, 404, nil, none)
	c.do("POST", "/v1/guard/report", map[string]any{"ticket": tk.Ticket, "outcome": "sideways"}, 400, nil, bad)
	c.do("POST", "/v1/guard/report", map[string]any{"ticket": tk.Ticket, "outcome": "answered"}, 200, nil, none)
	c.do("POST", "/v1/guard/report", map[string]any{"ticket": tk.Ticket, "outcome": "answered"}, 404, nil, none)
	c.do("POST", "/v1/guard/acquire", map[string]any{"url": "no-host"}, 400, nil, none)
	c.do("POST", "/v1/guard/acquire", nil, 400, nil, reqOpt{badInput: true, rawBody: []byte(`{"url":`)})
	for range 2 {
		c.do("POST", "/v1/guard/acquire", map[string]any{"url": "http://down.example/"}, 200, &tk, none)
		c.do("POST", "/v1/guard/report", map[string]any{"ticket": tk.Ticket, "outcome": "failed", "error_class": "refused"}, 200, nil, none)
	}
	c.do("POST", "/v1/guard/acquire", map[string]any{"url": "http://down.example/x", "exempt": false}, 503, nil, none)
	c.do("GET", "/v1/guard?state=open", nil, 200, nil, none)
	c.do("GET", "/v1/guard?state=ajar", nil, 400, nil, bad)
	c.do("POST", "/v1/guard/reset", map[string]any{"url": "http://down.example/"}, 204, nil, none)
	c.do("POST", "/v1/guard/reset", map[string]any{}, 400, nil, bad)
	c.do("POST", "/v1/guard/reset-all", nil, 204, nil, none)
	c.do("POST", "/v1/guard/reset", map[string]any{"url": "x", "urls": 1}, 400, nil, bad)

	// Fetch: an upstream answer, a refused upstream twice, then a
	// fast-fail; a slow upstream; bad queries.
	q := func(u string) string { return "/v1/fetch?url=" + url.QueryEscape(u) }
	c.do("GET", q(upstream.URL+"/hello?a=1"), nil, 200, nil, none)
	c.do("POST", q(upstream.URL+"/post"), nil, 200, nil, reqOpt{rawBody: []byte("raw upload"),
		header: http.Header{"Content-Type": {"text/plain"}}})
	c.do("GET", q(upstream.URL+"/slow"), nil, 504, nil, none)
	for range 2 {
		c.do("GET", q(dead+"/x"), nil, 502, nil, none)
	}
	c.do("GET", q(dead+"/x"), nil, 503, nil, none)
	c.do("GET", "/v1/fetch?url=http://127.0.0.1:1/?a=1&b=2", nil, 400, nil, bad)
	c.do("POST", "/v1/fetch?url=ftp://example.org/", nil, 400, nil, none)
	c.do("GET", q(upstream.URL+"/")+"&exempt=maybe", nil, 400, nil, bad)

	// Hosts.
	c.do("POST", "/v1/hosts/good.example/touch", map[string]any{"ok": true}, 200, nil, none)
	c.do("POST", "/v1/hosts/bad.example/touch", map[string]any{"ok": false}, 200, nil, none)
	c.do("POST", "/v1/hosts/bad.example/touch", map[string]any{}, 400, nil, bad)
	c.do("GET", "/v1/hosts?view=backoff&limit=10", nil, 200, nil, none)
	c.do("GET", "/v1/hosts?limit=1", nil, 200, nil, none)
	c.do("GET", "/v1/hosts?view=sideways", nil, 400, nil, bad)
	c.do("GET", "/v1/hosts/good.example", nil, 200, nil, none)
	c.do("GET", "/v1/hosts/never-seen.example", nil, 404, nil, none)
	c.do("GET", "/v1/hosts/bad%07name", nil, 400, nil, none)
	c.do("POST", "/v1/hosts/bad.example/reset", nil, 200, nil, none)
	c.do("POST", "/v1/hosts/bad%07name/reset", nil, 400, nil, none)

	// Items: every operation, each with an error.
	var items []map[string]any
	for i := range 6 {
		items = append(items, map[string]any{"id": fmt.Sprintf("spec-%d", i), "priority": i % 3, "payload": "cGF5bG9hZA=="})
	}
	c.do("POST", "/v1/items", map[string]any{"items": items}, 200, nil, none)
	c.do("POST", "/v1/items", map[string]any{"items": []any{}}, 400, nil, bad)
	var claim struct{ Leases []leaseOut }
	c.do("POST", "/v1/items/claim", map[string]any{"n": 6, "lease_seconds": 600, "worker": "spec"}, 200, &claim, none)
	if len(claim.Leases) != 6 {
		t.Fatalf("claimed %d", len(claim.Leases))
	}
	l := claim.Leases
	c.do("POST", "/v1/items/claim", map[string]any{"n": 0, "lease_seconds": 30}, 400, nil, bad)
	c.do("POST", "/v1/items/claim", map[string]any{"n": 1, "lease_seconds": 30, "wait_seconds": 0.05}, 200, nil, none)
	c.do("POST", "/v1/items/"+l[0].ID+"/succeed", map[string]any{"lease": l[0].Lease}, 200, nil, none)
	c.do("POST", "/v1/items/"+l[1].ID+"/fail", map[string]any{"lease": l[1].Lease, "class": "not_found", "note": "404"}, 200, nil, none)
	c.do("POST", "/v1/items/"+l[1].ID+"/fail", map[string]any{"lease": l[1].Lease}, 400, nil, bad)
	c.do("POST", "/v1/items/"+l[2].ID+"/extend", map[string]any{"lease": l[2].Lease, "lease_seconds": 900}, 200, nil, none)
	c.do("POST", "/v1/items/"+l[3].ID+"/release", map[string]any{"lease": l[3].Lease}, 200, nil, none)
	c.do("POST", "/v1/items/"+l[3].ID+"/release", map[string]any{"lease": l[4].Lease}, 409, nil, none)
	c.do("POST", "/v1/items/"+l[3].ID+"/succeed", map[string]any{"lease": l[3].Lease}, 409, nil, none)
	c.do("POST", "/v1/items/"+l[3].ID+"/extend", map[string]any{"lease": l[3].Lease, "lease_seconds": 10}, 409, nil, none)
	c.do("POST", "/v1/items/"+l[1].ID+"/observe", nil, 200, nil, none)
	c.do("POST", "/v1/items/"+l[1].ID+"/observe", map[string]any{"boost": 2}, 200, nil, none)
	c.do("POST", "/v1/items/never-added/observe", nil, 404, nil, none)
	c.do("POST", "/v1/items/"+l[1].ID+"/due-now", nil, 200, nil, none)
	c.do("POST", "/v1/items/never-added/due-now", nil, 404, nil, none)
	c.do("DELETE", "/v1/items/new-by-sight", nil, 404, nil, none)
	c.do("POST", "/v1/items/new-by-sight/observe", map[string]any{"add_if_missing": true, "priority": 1, "payload": "eA=="}, 200, nil, none)
	c.do("POST", "/v1/items/observe", map[string]any{"ids": []string{l[1].ID, "unknown-id"}, "boost": 1}, 200, nil, none)
	c.do("DELETE", "/v1/items/new-by-sight", nil, 204, nil, none)
	c.do("POST", "/v1/items/observe", map[string]any{"ids": []string{}}, 400, nil, bad)
	c.do("POST", "/v1/items/settle", map[string]any{"outcomes": []map[string]any{
		{"id": l[4].ID, "lease": l[4].Lease, "op": "succeed"},
		{"id": l[5].ID, "lease": l[5].Lease, "op": "fail", "class": "no_peers", "note": "0 peers"},
		{"id": l[5].ID, "lease": l[0].Lease, "op": "release"},
	}}, 200, nil, none)
	c.do("POST", "/v1/items/settle", map[string]any{"outcomes": []map[string]any{{"id": "x", "lease": "1", "op": "extend"}}}, 400, nil, bad)
	c.do("GET", "/v1/items/"+l[1].ID, nil, 200, nil, none)
	c.do("GET", "/v1/items/never-added", nil, 404, nil, none)
	c.do("GET", "/v1/items/stats", nil, 200, nil, none)
	var page struct{ Next string }
	c.do("GET", "/v1/items?limit=2", nil, 200, &page, none)
	c.do("GET", "/v1/items?state=scheduled,leased&class=not_found&after="+page.Next, nil, 200, nil, none)
	c.do("GET", "/v1/items?due_before=2030-01-01T00:00:00Z", nil, 200, nil, none)
	c.do("GET", "/v1/items?state=sleeping", nil, 400, nil, bad)

	// Budget.
	c.do("POST", "/v1/budget/admit", map[string]any{"source": "idx", "kind": "head_poll"}, 200, nil, none)
	c.do("POST", "/v1/budget/admit", map[string]any{"source": "idx", "kind": "head_poll"}, 429, nil, none)
	c.do("POST", "/v1/budget/admit", map[string]any{"source": "nowhere", "kind": "search"}, 404, nil, none)
	c.do("POST", "/v1/budget/admit", map[string]any{"kind": "lunch"}, 400, nil, bad)
	var grant struct{ ID string }
	c.do("POST", "/v1/budget/admit", map[string]any{"kind": "bytes", "cost": 4096}, 200, &grant, none)
	c.do("POST", "/v1/budget/grants/"+grant.ID+"/settle", map[string]any{"actual": 1024}, 200, nil, none)
	c.do("POST", "/v1/budget/grants/"+grant.ID+"/settle", map[string]any{"actual": 2048}, 409, nil, none)
	c.do("POST", "/v1/budget/grants/not-a-grant/settle", map[string]any{"actual": 1}, 400, nil, none)
	c.do("GET", "/v1/budget", nil, 200, nil, none)
	c.do("PUT", "/v1/budget/sources/extra", map[string]any{"owner_daily_limit": 10, "share": "gentle", "pace_seconds": 1}, 201, nil, none)
	c.do("PUT", "/v1/budget/sources/extra", map[string]any{"owner_daily_limit": 10, "share": "unlimited", "reserve_percent": 20}, 200, nil, none)
	c.do("PUT", "/v1/budget/sources/extra", map[string]any{"share": "greedy"}, 400, nil, bad)
	c.do("POST", "/v1/budget/pause", map[string]any{"paused": true}, 200, nil, none)
	c.do("POST", "/v1/budget/admit", map[string]any{"kind": "validation"}, 503, nil, none)
	c.do("POST", "/v1/budget/pause", map[string]any{"paused": false}, 200, nil, none)
	c.do("POST", "/v1/budget/pause", map[string]any{}, 400, nil, bad)
	c.do("POST", "/v1/budget/sources/idx/pause", map[string]any{"paused": true}, 200, nil, none)
	c.do("POST", "/v1/budget/admit", map[string]any{"source": "idx", "kind": "search"}, 503, nil, none)
	c.do("POST", "/v1/budget/sources/idx/pause", map[string]any{"paused": false}, 200, nil, none)
	c.do("POST", "/v1/budget/sources/idx/pause", map[string]any{}, 400, nil, bad)
	c.do("POST", "/v1/budget/sources/nope/pause", map[string]any{"paused": true}, 404, nil, none)
	c.do("POST", "/v1/budget/sources/extra/reset", nil, 409, nil, none)
	c.do("POST", "/v1/budget/sources/films/reset", nil, 200, nil, none)
	c.do("POST", "/v1/budget/sources/nope/reset", nil, 404, nil, none)
	c.do("DELETE", "/v1/budget/sources/extra", nil, 204, nil, none)
	c.do("DELETE", "/v1/budget/sources/extra", nil, 404, nil, none)
	c.do("DELETE", "/v1/budget/sources/films", nil, 409, nil, none)

	// Leader and feeds: SQLite always leads, and polls the feed at once.
	c.do("GET", "/v1/leader", nil, 200, nil, none)
	c.do("GET", "/v1/feeds", nil, 200, nil, none)
	if !waitfor.Until(15*time.Second, func() bool {
		var kept struct{ Items []any }
		c.do("GET", "/v1/feeds/films/items?limit=2", nil, 200, &kept, none)
		return len(kept.Items) > 0
	}) {
		t.Fatalf("the feed kept no items:\n%s", d.Logs.String())
	}
	c.do("GET", "/v1/feeds", nil, 200, nil, none)
	c.do("GET", "/v1/feeds/films/items?limit=0", nil, 400, nil, bad)
	c.do("GET", "/v1/feeds/nothing/items", nil, 404, nil, none)
	c.do("POST", "/v1/feeds/films/reset", nil, 200, nil, none)
	c.do("POST", "/v1/feeds/nothing/reset", nil, 404, nil, none)

	// Evidence.
	c.do("POST", "/v1/evidence", map[string]any{"source": "films", "subject": "film-1", "verdict": "available"}, 200, nil, none)
	c.do("POST", "/v1/evidence", map[string]any{"source": "debrid", "subject": "film-1", "verdict": "unknown", "reason": "timeout"}, 200, nil, none)
	c.do("POST", "/v1/evidence", map[string]any{"source": "films", "subject": "film-1", "verdict": "perhaps"}, 400, nil, bad)
	c.do("GET", "/v1/evidence/film-1", nil, 200, nil, none)
	c.do("GET", "/v1/evidence/"+url.PathEscape(strings.Repeat("s", 1100)), nil, 400, nil, none)
	c.do("POST", "/v1/evidence/policy", map[string]any{"fingerprint": "spec-policy-2"}, 200, nil, none)
	c.do("POST", "/v1/evidence/policy", map[string]any{}, 400, nil, bad)
	c.do("GET", "/v1/status", nil, 200, nil, none)

	// Every operation was driven, with a success and, where the document
	// lists an error beyond the generic ones, with one of those.
	generic := map[string]bool{"401": true, "413": true, "500": true, "501": true}
	for _, o := range specOperations(t, model) {
		st := c.seen[o]
		var ok2, errSeen bool
		for code := range st {
			ok2 = ok2 || code < 400
			errSeen = errSeen || (code >= 400 && code != 401)
		}
		if !ok2 {
			t.Errorf("%s was never answered with a success", o)
		}
		needErr := false
		item := model.Paths.PathItems.GetOrZero(o.path)
		for method, op := range item.GetOperations().FromOldest() {
			if strings.ToUpper(method) != o.method || op.Responses == nil {
				continue
			}
			for code := range op.Responses.Codes.KeysFromOldest() {
				if code >= "400" && !generic[code] {
					needErr = true
				}
			}
		}
		// A ready daemon cannot be made unready from here.
		if needErr && !errSeen && o.path != "/readyz" {
			t.Errorf("%s was never answered with one of its documented errors", o)
		}
	}
}
