package api_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
)

// body is one JSON body of the API: the route's request or its success
// answer, and the wire type that carries it.
type body struct {
	route   string // "POST /v1/items"
	request bool
	value   any
}

// bodies lists every body package api carries. TestWireTypesMatchTheOpenAPIDocument
// holds each against the document, and every body the document describes
// must be here or in notInAPI.
var bodies = []body{
	{"POST /v1/items", true, api.AddRequest{}},
	{"POST /v1/items", false, api.AddResult{}},
	{"GET /v1/items", false, api.ItemPage{}},
	{"POST /v1/items/claim", true, api.ClaimRequest{}},
	{"POST /v1/items/claim", false, api.ClaimResponse{}},
	{"POST /v1/items/observe", true, api.ObserveBatchRequest{}},
	{"POST /v1/items/observe", false, api.ObserveBatchResponse{}},
	{"POST /v1/items/settle", true, api.SettleRequest{}},
	{"POST /v1/items/settle", false, api.SettleResponse{}},
	{"GET /v1/items/stats", false, api.ItemsStats{}},
	{"GET /v1/items/{id}", false, api.Item{}},
	{"POST /v1/items/{id}/succeed", true, api.LeaseRequest{}},
	{"POST /v1/items/{id}/succeed", false, api.Item{}},
	{"POST /v1/items/{id}/release", true, api.LeaseRequest{}},
	{"POST /v1/items/{id}/release", false, api.Item{}},
	{"POST /v1/items/{id}/fail", true, api.FailRequest{}},
	{"POST /v1/items/{id}/fail", false, api.Item{}},
	{"POST /v1/items/{id}/extend", true, api.ExtendRequest{}},
	{"POST /v1/items/{id}/extend", false, api.ExtendResponse{}},
	{"POST /v1/items/{id}/observe", true, api.ObserveRequest{}},
	{"POST /v1/items/{id}/observe", false, api.ObserveResult{}},
	{"POST /v1/items/{id}/due-now", false, api.DueNowResult{}},

	{"POST /v1/guard/acquire", true, api.AcquireRequest{}},
	{"POST /v1/guard/acquire", false, api.Ticket{}},
	{"POST /v1/guard/report", true, api.ReportRequest{}},
	{"POST /v1/guard/report", false, api.ReportResult{}},
	{"POST /v1/guard/tickets/{id}/extend", false, api.TicketExtension{}},
	{"POST /v1/guard/reset", true, api.ResetRequest{}},
	{"GET /v1/guard", false, api.EndpointList{}},

	{"POST /v1/hosts/{name}/touch", true, api.TouchRequest{}},
	{"POST /v1/hosts/{name}/touch", false, api.TouchResult{}},
	{"GET /v1/hosts", false, api.HostPage{}},
	{"GET /v1/hosts/{name}", false, api.Host{}},
	{"POST /v1/hosts/{name}/reset", false, api.HostReset{}},

	{"POST /v1/budget/admit", true, api.AdmitRequest{}},
	{"POST /v1/budget/admit", false, api.Grant{}},
	{"POST /v1/budget/grants/{id}/settle", true, api.GrantSettleRequest{}},
	{"POST /v1/budget/grants/{id}/settle", false, api.GrantSettlement{}},
	{"GET /v1/budget", false, api.BudgetReport{}},
	{"PUT /v1/budget/sources/{name}", true, api.SourceRequest{}},
	{"PUT /v1/budget/sources/{name}", false, api.SourceConfig{}},
	{"POST /v1/budget/sources/{name}/reset", false, api.SourceReset{}},
	{"POST /v1/budget/pause", true, api.PauseRequest{}},
	{"POST /v1/budget/pause", false, api.PauseResult{}},
	{"POST /v1/budget/sources/{name}/pause", true, api.PauseRequest{}},
	{"POST /v1/budget/sources/{name}/pause", false, api.SourcePauseResult{}},

	{"GET /v1/feeds", false, api.FeedList{}},
	{"GET /v1/feeds/{name}/items", false, api.FeedItems{}},
	{"POST /v1/feeds/{name}/reset", false, api.FeedReset{}},

	{"POST /v1/evidence", true, api.EvidenceRequest{}},
	{"POST /v1/evidence", false, api.EvidenceRecord{}},
	{"GET /v1/evidence/{subject}", false, api.EvidenceSummary{}},
	{"POST /v1/evidence/policy", true, api.PolicyRequest{}},
	{"POST /v1/evidence/policy", false, api.PolicyResult{}},

	{"GET /v1/status", false, api.Status{}},
	{"GET /v1/leader", false, api.Leader{}},
	{"GET /readyz", false, api.Readiness{}},
}

// notInAPI are the documented bodies package api does not carry: the
// liveness probe's constant answer and the document itself.
var notInAPI = []string{"GET /healthz", "GET /v1/openapi.json"}

type schema struct {
	Ref        string             `json:"$ref"`
	Type       any                `json:"type"`
	Properties map[string]*schema `json:"properties"`
	Items      *schema            `json:"items"`
	AllOf      []*schema          `json:"allOf"`
	Content    map[string]struct {
		Schema *schema `json:"schema"`
	} `json:"content"`
}

type document struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas       map[string]*schema `json:"schemas"`
		RequestBodies map[string]*schema `json:"requestBodies"`
		Responses     map[string]*schema `json:"responses"`
	} `json:"components"`
}

type operation struct {
	RequestBody *schema            `json:"requestBody"`
	Responses   map[string]*schema `json:"responses"`
}

// resolve follows $refs and merges allOf into one object schema.
func (d *document) resolve(t *testing.T, s *schema) *schema {
	t.Helper()
	for s != nil && s.Ref != "" {
		parts := strings.Split(strings.TrimPrefix(s.Ref, "#/components/"), "/")
		var table map[string]*schema
		switch parts[0] {
		case "schemas":
			table = d.Components.Schemas
		case "requestBodies":
			table = d.Components.RequestBodies
		case "responses":
			table = d.Components.Responses
		}
		next, ok := table[parts[len(parts)-1]]
		if !ok {
			t.Fatalf("unresolved $ref %s", s.Ref)
		}
		s = next
	}
	if s == nil || len(s.AllOf) == 0 {
		return s
	}
	merged := &schema{Type: "object", Properties: map[string]*schema{}}
	for k, v := range s.Properties {
		merged.Properties[k] = v
	}
	for _, part := range s.AllOf {
		for k, v := range d.resolve(t, part).Properties {
			merged.Properties[k] = v
		}
	}
	return merged
}

// jsonBody is the schema of a request body or response's JSON content.
func (d *document) jsonBody(t *testing.T, s *schema) *schema {
	s = d.resolve(t, s)
	if s == nil {
		return nil
	}
	c, ok := s.Content["application/json"]
	if !ok || c.Schema == nil {
		return nil
	}
	return d.resolve(t, c.Schema)
}

func (d *document) body(t *testing.T, route string, request bool) *schema {
	method, path, _ := strings.Cut(route, " ")
	raw, ok := d.Paths[path][strings.ToLower(method)]
	if !ok {
		return nil
	}
	var op operation
	if err := json.Unmarshal(raw, &op); err != nil {
		t.Fatalf("%s: %v", route, err)
	}
	if request {
		return d.jsonBody(t, op.RequestBody)
	}
	for _, code := range []string{"200", "201"} {
		if r := op.Responses[code]; r != nil {
			return d.jsonBody(t, r)
		}
	}
	return nil
}

func loadDocument(t *testing.T) *document {
	t.Helper()
	b, err := os.ReadFile("../server/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var d document
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func TestWireTypesMatchTheOpenAPIDocument(t *testing.T) {
	d := loadDocument(t)
	for _, b := range bodies {
		what := b.route + " answer"
		if b.request {
			what = b.route + " request"
		}
		s := d.body(t, b.route, b.request)
		if s == nil {
			t.Errorf("%s: the document has no JSON body for it", what)
			continue
		}
		compare(t, d, what, s, wireForm(t, b.value))
	}
}

// TestEveryDocumentedBodyHasAWireType finds a body the document describes
// that package api does not carry.
func TestEveryDocumentedBodyHasAWireType(t *testing.T) {
	d := loadDocument(t)
	covered := map[string]bool{}
	for _, b := range bodies {
		covered[b.route+" "+strings.Repeat("request", boolInt(b.request))] = true
	}
	var missing []string
	for path, ops := range d.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			route := strings.ToUpper(method) + " " + path
			if slices.Contains(notInAPI, route) {
				continue
			}
			for _, request := range []bool{true, false} {
				s := d.body(t, route, request)
				if s == nil || len(s.Properties) == 0 {
					continue
				}
				if !covered[route+" "+strings.Repeat("request", boolInt(request))] {
					missing = append(missing, route+" "+map[bool]string{true: "request", false: "answer"}[request])
				}
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("documented bodies without a type in package api (add them to bodies, or to notInAPI with a reason):\n%s", strings.Join(missing, "\n"))
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compare fails for every member of the wire form the schema does not
// have, and every property of the schema the wire form lacks, then
// descends into the members both have.
func compare(t *testing.T, d *document, where string, s *schema, wire any) {
	t.Helper()
	switch w := wire.(type) {
	case map[string]any:
		if len(s.Properties) == 0 {
			return // a map, or an object the document leaves open
		}
		for _, k := range sortedKeys(w) {
			if _, ok := s.Properties[k]; !ok {
				t.Errorf("%s: %q is in the Go type, not in the document", where, k)
			}
		}
		for _, k := range sortedKeys(s.Properties) {
			v, ok := w[k]
			if !ok {
				t.Errorf("%s: %q is in the document, not in the Go type", where, k)
				continue
			}
			compare(t, d, where+"."+k, d.resolve(t, s.Properties[k]), v)
		}
	case []any:
		if s.Items != nil && len(w) > 0 {
			compare(t, d, where+"[]", d.resolve(t, s.Items), w[0])
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// wireForm is v with every field filled, as encoding/json writes it and
// reads back into plain maps and slices: every member the type can send
// is present, custom encoders (retry.Stats, api.ItemsStats) included.
func wireForm(t *testing.T, v any) any {
	t.Helper()
	rv := reflect.New(reflect.TypeOf(v)).Elem()
	fill(rv, 0)
	b, err := json.Marshal(rv.Interface())
	if err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	return out
}

var timeType = reflect.TypeFor[time.Time]()

// fill sets v to a value with no zero members, so that omitempty leaves
// nothing out.
func fill(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			// BudgetSource's Hide fields exist to be nil: they shadow the
			// library's nanosecond fields of the same JSON names.
			if !f.IsExported() && !f.Anonymous || strings.HasPrefix(f.Name, "Hide") {
				continue
			}
			if v.Field(i).CanSet() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("x"))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
}
