package server

import (
	"encoding/base64"
	"github.com/hostguard/hostguard/internal/waitfor"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

type leaseJSON struct {
	ID       string    `json:"id"`
	Lease    string    `json:"lease"`
	Until    time.Time `json:"until"`
	Attempt  int       `json:"attempt"`
	Priority int       `json:"priority"`
	Payload  []byte    `json:"payload"`
}

type itemJSON struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Priority  int       `json:"priority"`
	Payload   []byte    `json:"payload"`
	NextAt    time.Time `json:"next_at"`
	Attempts  int       `json:"attempts"`
	Failures  int       `json:"failures"`
	LastClass string    `json:"last_class"`
	Host      string    `json:"host"`
}

func (f *fixture) claim(t *testing.T, n int, lease float64) []leaseJSON {
	t.Helper()
	var out struct {
		Leases []leaseJSON `json:"leases"`
	}
	decodeInto(t, f.do("POST", "/v1/items/claim", map[string]any{"n": n, "lease_seconds": lease, "worker": "w1"}), &out)
	return out.Leases
}

func itemPath(id, op string) string {
	p := "/v1/items/" + url.PathEscape(id)
	if op != "" {
		p += "/" + op
	}
	return p
}

func TestItemsLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	payload := []byte{0, 1, 2, 250}
	var added struct{ Added, Existing int }
	decodeInto(t, f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{
		{"id": "a/with/slashes", "priority": 5, "payload": base64.StdEncoding.EncodeToString(payload)},
		{"id": "b"},
		{"id": "c", "priority": -1},
	}}), &added)
	if added.Added != 3 || added.Existing != 0 {
		t.Fatalf("add: %+v", added)
	}
	decodeInto(t, f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "b"}}}), &added)
	if added.Added != 0 || added.Existing != 1 {
		t.Fatalf("re-add: %+v", added)
	}

	leases := f.claim(t, 2, 30)
	if len(leases) != 2 || leases[0].ID != "a/with/slashes" || string(leases[0].Payload) != string(payload) || leases[0].Attempt != 1 {
		t.Fatalf("claim: %+v", leases)
	}
	a, b := leases[0], leases[1]

	var it itemJSON
	decodeInto(t, f.do("POST", itemPath(a.ID, "succeed"), map[string]any{"lease": a.Lease}), &it)
	if it.State != "done" {
		t.Fatalf("after succeed: %+v", it)
	}
	// Repeating the same call is harmless.
	if r := f.do("POST", itemPath(a.ID, "succeed"), map[string]any{"lease": a.Lease}); r.status != 200 {
		t.Fatalf("repeated succeed: %d %s", r.status, r.body)
	}

	var ext struct {
		Until time.Time `json:"until"`
	}
	decodeInto(t, f.do("POST", itemPath(b.ID, "extend"), map[string]any{"lease": b.Lease, "lease_seconds": 120}), &ext)
	if !ext.Until.Equal(f.clock.Now().Add(120 * time.Second)) {
		t.Fatalf("extended until %v, want now+120s", ext.Until)
	}
	decodeInto(t, f.do("POST", itemPath(b.ID, "fail"), map[string]any{"lease": b.Lease, "class": "timeout", "note": "slow"}), &it)
	if it.State != "scheduled" || it.LastClass != "timeout" || it.Failures != 1 || !it.NextAt.Equal(f.clock.Now().Add(30*time.Minute)) {
		t.Fatalf("after fail: %+v", it)
	}
	// The old lease is spent: every operation with it is a conflict.
	for _, op := range []string{"succeed", "release"} {
		expectError(t, f.do("POST", itemPath(b.ID, op), map[string]any{"lease": b.Lease}), http.StatusConflict, "lease")
	}

	var obs map[string]any
	decodeInto(t, f.do("POST", itemPath(b.ID, "observe"), nil), &obs)
	decodeInto(t, f.do("GET", itemPath(b.ID, ""), nil), &it)
	if !it.NextAt.Equal(f.clock.Now().Add(10*time.Minute)) || it.Priority != 1 {
		t.Fatalf("after observe: %+v", it)
	}

	c := f.claim(t, 5, 30)
	if len(c) != 1 || c[0].ID != "c" {
		t.Fatalf("second claim: %+v", c)
	}
	decodeInto(t, f.do("POST", itemPath("c", "release"), map[string]any{"lease": c[0].Lease}), &it)
	if it.State != "pending" {
		t.Fatalf("after release: %+v", it)
	}

	var st struct {
		Total   int            `json:"total"`
		ByState map[string]int `json:"by_state"`
		ByClass map[string]int `json:"by_class"`
		DueNow  int            `json:"due_now"`
	}
	decodeInto(t, f.do("GET", "/v1/items/stats", nil), &st)
	if st.Total != 3 || st.ByState["done"] != 1 || st.ByState["scheduled"] != 1 || st.ByState["pending"] != 1 ||
		st.ByClass["timeout"] != 1 || st.DueNow != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestItemsBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "x"}}})
	l := f.claim(t, 1, 30)
	if len(l) != 1 {
		t.Fatal("nothing claimed")
	}
	tok := l[0].Lease
	long := strings.Repeat("i", 300)
	cases := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"add no items", "POST", "/v1/items", `{}`, 400, "items"},
		{"add empty", "POST", "/v1/items", `{"items":[]}`, 400, "items"},
		{"add empty id", "POST", "/v1/items", `{"items":[{"id":"ok"},{"id":""}]}`, 400, "items[1].id"},
		{"add long id", "POST", "/v1/items", `{"items":[{"id":"` + long + `"}]}`, 400, "items[0].id"},
		{"add bad base64", "POST", "/v1/items", `{"items":[{"id":"p","payload":"***"}]}`, 400, "items[0].payload"},
		{"add big payload", "POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "p", "payload": base64.StdEncoding.EncodeToString(make([]byte, 65<<10))}}}, 400, "items[0].payload"},
		{"add priority", "POST", "/v1/items", `{"items":[{"id":"p","priority":2000000000}]}`, 400, "items[0].priority"},
		{"add unknown field", "POST", "/v1/items", `{"items":[{"id":"p","prio":1}]}`, 400, "items[0].prio"},
		{"claim no n", "POST", "/v1/items/claim", `{"lease_seconds":30}`, 400, "n"},
		{"claim zero n", "POST", "/v1/items/claim", `{"n":0,"lease_seconds":30}`, 400, "n"},
		{"claim huge n", "POST", "/v1/items/claim", `{"n":100000,"lease_seconds":30}`, 400, "n"},
		{"claim no lease", "POST", "/v1/items/claim", `{"n":1}`, 400, "lease_seconds"},
		{"claim negative lease", "POST", "/v1/items/claim", `{"n":1,"lease_seconds":-5}`, 400, "lease_seconds"},
		{"claim n not int", "POST", "/v1/items/claim", `{"n":1.5,"lease_seconds":5}`, 400, "n"},
		{"succeed no lease", "POST", itemPath("x", "succeed"), `{}`, 400, "lease"},
		{"succeed malformed lease", "POST", itemPath("x", "succeed"), `{"lease":"abc"}`, 400, "lease"},
		{"succeed with class", "POST", itemPath("x", "succeed"), map[string]any{"lease": tok, "class": "x"}, 400, "class"},
		{"fail no class", "POST", itemPath("x", "fail"), map[string]any{"lease": tok}, 400, "class"},
		{"extend no seconds", "POST", itemPath("x", "extend"), map[string]any{"lease": tok}, 400, "lease_seconds"},
		{"extend negative", "POST", itemPath("x", "extend"), map[string]any{"lease": tok, "lease_seconds": -1}, 400, "lease_seconds"},
		{"unknown op", "POST", itemPath("x", "explode"), map[string]any{"lease": tok}, 404, "op"},
		{"wrong item for lease", "POST", itemPath("nope", "succeed"), map[string]any{"lease": tok}, 404, "id"},
		{"observe negative boost", "POST", itemPath("x", "observe"), `{"boost":-1}`, 400, "boost"},
		{"observe with lease", "POST", itemPath("x", "observe"), map[string]any{"lease": tok}, 400, "lease"},
		{"observe unknown", "POST", itemPath("ghost", "observe"), nil, 404, "id"},
		{"get unknown", "GET", itemPath("ghost", ""), nil, 404, "id"},
		{"get long id", "GET", itemPath(long, ""), nil, 400, "id"},
		{"observe batch no ids", "POST", "/v1/items/observe", `{}`, 400, "ids"},
		{"observe batch empty id", "POST", "/v1/items/observe", `{"ids":["x",""],"add_if_missing":true}`, 400, "ids[1]"},
		{"observe batch negative boost", "POST", "/v1/items/observe", `{"ids":["x"],"boost":-2}`, 400, "boost"},
		{"observe batch unknown field", "POST", "/v1/items/observe", `{"ids":["x"],"lease":"1"}`, 400, "lease"},
		{"settle no outcomes", "POST", "/v1/items/settle", `{"outcomes":[]}`, 400, "outcomes"},
		{"settle no lease", "POST", "/v1/items/settle", `{"outcomes":[{"id":"x","op":"succeed"}]}`, 400, "outcomes[0].lease"},
		{"settle bad op", "POST", "/v1/items/settle", map[string]any{"outcomes": []map[string]any{{"id": "x", "lease": tok, "op": "extend"}}}, 400, "outcomes[0].op"},
		{"settle fail no class", "POST", "/v1/items/settle", map[string]any{"outcomes": []map[string]any{{"id": "x", "lease": tok, "op": "succeed"}, {"id": "x", "lease": tok, "op": "fail"}}}, 400, "outcomes[1].class"},
		{"settle class on succeed", "POST", "/v1/items/settle", map[string]any{"outcomes": []map[string]any{{"id": "x", "lease": tok, "op": "succeed", "class": "timeout"}}}, 400, "outcomes[0].class"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, f.do(c.method, c.path, c.body), c.status, c.field)
		})
	}
	// Nothing changed: one item, still leased under the same token.
	var it itemJSON
	decodeInto(t, f.do("GET", itemPath("x", ""), nil), &it)
	if it.State != "leased" {
		t.Fatalf("the item moved to %s", it.State)
	}
	var st struct {
		Total int `json:"total"`
	}
	decodeInto(t, f.do("GET", "/v1/items/stats", nil), &st)
	if st.Total != 1 {
		t.Fatalf("bad adds left %d items", st.Total)
	}
	if r := f.do("POST", itemPath("x", "succeed"), map[string]any{"lease": tok}); r.status != 200 {
		t.Fatalf("the lease was lost to bad requests: %d %s", r.status, r.body)
	}
}

func TestItemsBatchObserveAndSettle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "a"}, {"id": "b"}, {"id": "c"}}})

	var obs struct {
		Results []struct {
			ID       string `json:"id"`
			Unknown  bool   `json:"unknown"`
			Added    bool   `json:"added"`
			Priority int    `json:"priority"`
		} `json:"results"`
	}
	decodeInto(t, f.do("POST", "/v1/items/observe", map[string]any{"ids": []string{"c", "ghost"}, "boost": 3}), &obs)
	if len(obs.Results) != 2 || obs.Results[0].ID != "c" || obs.Results[0].Priority != 3 ||
		!obs.Results[1].Unknown || obs.Results[1].Added {
		t.Fatalf("observe batch: %+v", obs.Results)
	}
	decodeInto(t, f.do("POST", "/v1/items/observe", map[string]any{"ids": []string{"new"}, "add_if_missing": true}), &obs)
	if len(obs.Results) != 1 || !obs.Results[0].Added {
		t.Fatalf("observe batch with add_if_missing: %+v", obs.Results)
	}

	leases := f.claim(t, 10, 30)
	if len(leases) != 4 || leases[0].ID != "c" {
		t.Fatalf("claim after observe: want 4 leases, the boosted c first; got %+v", leases)
	}
	tok := map[string]string{}
	for _, l := range leases {
		tok[l.ID] = l.Lease
	}
	outcomes := []map[string]any{
		{"id": "a", "lease": tok["a"], "op": "succeed"},
		{"id": "b", "lease": tok["b"], "op": "fail", "class": "timeout", "note": "slow"},
		{"id": "c", "lease": tok["c"], "op": "release"},
		{"id": "new", "lease": tok["a"], "op": "succeed"}, // not its token
	}
	var settled struct {
		Results []struct {
			ID    string `json:"id"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"results"`
	}
	decodeInto(t, f.do("POST", "/v1/items/settle", map[string]any{"outcomes": outcomes}), &settled)
	want := []struct {
		ok  bool
		err string
	}{{true, ""}, {true, ""}, {true, ""}, {false, "lease_lost"}}
	if len(settled.Results) != len(want) {
		t.Fatalf("settle: %+v", settled.Results)
	}
	for i, w := range want {
		if r := settled.Results[i]; r.OK != w.ok || r.Error != w.err || r.ID != outcomes[i]["id"] {
			t.Errorf("settle result %d = %+v; want ok=%v error=%q", i, r, w.ok, w.err)
		}
	}
	states := map[string]string{"a": "done", "b": "scheduled", "c": "pending", "new": "leased"}
	for id, st := range states {
		var it itemJSON
		decodeInto(t, f.do("GET", itemPath(id, ""), nil), &it)
		if it.State != st {
			t.Errorf("%s is %s after settle; want %s", id, it.State, st)
		}
	}
	// Sending the same batch again is harmless: the settled ones repeat.
	decodeInto(t, f.do("POST", "/v1/items/settle", map[string]any{"outcomes": outcomes[:2]}), &settled)
	if !settled.Results[0].OK || !settled.Results[1].OK {
		t.Fatalf("repeated settle: %+v", settled.Results)
	}
}

func TestItemsClaimLongPoll(t *testing.T) {
	t.Parallel()
	f := setup(t)
	type answered struct {
		a  answer
		at time.Time
	}
	got := make(chan answered, 1)
	go func() {
		a := f.do("POST", "/v1/items/claim", map[string]any{"n": 5, "lease_seconds": 30, "wait_seconds": 60})
		got <- answered{a, time.Now()}
	}()
	waitfor.True(t, 10*time.Second, "the claim waits", func() bool { return f.s.cfg.Retry.Waiting() == 1 })
	added := time.Now()
	decodeInto(t, f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "late"}}}), &struct{}{})
	r := <-got
	var out struct {
		Leases []leaseJSON `json:"leases"`
	}
	decodeInto(t, r.a, &out)
	if len(out.Leases) != 1 || out.Leases[0].ID != "late" || r.at.Sub(added) > 10*time.Second {
		t.Fatalf("long poll answered %+v %v after the add", out.Leases, r.at.Sub(added))
	}
	// Nothing due: a short wait answers with no leases.
	var empty struct {
		Leases []leaseJSON `json:"leases"`
	}
	decodeInto(t, f.do("POST", "/v1/items/claim", map[string]any{"n": 5, "lease_seconds": 30, "wait_seconds": 0.05}), &empty)
	if empty.Leases == nil || len(empty.Leases) != 0 {
		t.Fatalf("an empty long poll answered %+v; want []", empty.Leases)
	}
	for _, w := range []any{-1, 301, "soon"} {
		a := f.do("POST", "/v1/items/claim", map[string]any{"n": 1, "lease_seconds": 30, "wait_seconds": w})
		expectError(t, a, http.StatusBadRequest, "wait_seconds")
	}
}

func TestItemsClaimLongPollEndsAtShutdown(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.ShutdownTimeout = time.Minute })
	got := make(chan answer, 1)
	go func() {
		got <- f.do("POST", "/v1/items/claim", map[string]any{"n": 1, "lease_seconds": 30, "wait_seconds": 120})
	}()
	waitfor.True(t, 10*time.Second, "the claim waits", func() bool { return f.s.cfg.Retry.Waiting() == 1 })
	start := time.Now()
	if err := f.stop(); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Leases []leaseJSON `json:"leases"`
	}
	decodeInto(t, <-got, &out)
	if len(out.Leases) != 0 || time.Since(start) > 30*time.Second {
		t.Fatalf("at shutdown the long poll answered %+v after %v", out, time.Since(start))
	}
}
