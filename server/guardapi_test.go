package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
)

func TestGuardAcquireReportTripsAndFastFails(t *testing.T) {
	t.Parallel()
	// The seed's rules, without the daemon's probes (TestGuardProbes):
	// the first acquire after the open period is the trial.
	f := setup(t, func(c *Config) { c.Guard.MaxProbes = -1 })
	const u = "http://unreachable.example:8080/some/path?key=secret"
	for i := range 2 {
		a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u})
		if a.status != http.StatusOK {
			t.Fatalf("acquire %d: status %d: %s", i, a.status, a.body)
		}
		m := a.json(t)
		if m["endpoint"] != "http://unreachable.example:8080" {
			t.Fatalf("endpoint %v, want the origin only", m["endpoint"])
		}
		if m["trial"] != false {
			t.Fatalf("trial %v on a closed endpoint", m["trial"])
		}
		rep := f.do("POST", "/v1/guard/report", map[string]any{"ticket": m["ticket"], "outcome": "failed", "error_class": "refused"})
		if rep.status != http.StatusOK {
			t.Fatalf("report %d: status %d: %s", i, rep.status, rep.body)
		}
	}
	a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u})
	expectError(t, a, http.StatusServiceUnavailable, "")
	if a.header.Get("Retry-After") != "30" {
		t.Fatalf("Retry-After %q, want 30 (the default open period)", a.header.Get("Retry-After"))
	}
	m := a.json(t)
	if m["endpoint"] != "http://unreachable.example:8080" || m["retry_after_seconds"] != float64(30) {
		t.Fatalf("fast-fail body %s does not name the endpoint and the wait", a.body)
	}
	if strings.Contains(string(a.body), "secret") || strings.Contains(f.logs.String(), "secret") {
		t.Fatal("the URL's query leaked into an answer or a log line")
	}

	// After the open period exactly one trial is admitted.
	f.clock.Advance(30 * time.Second)
	trial := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)
	if trial["trial"] != true {
		t.Fatalf("first acquire after the open period is not the trial: %v", trial)
	}
	expectError(t, f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}), http.StatusServiceUnavailable, "")
	rep := f.do("POST", "/v1/guard/report", map[string]any{"ticket": trial["ticket"], "outcome": "answered"})
	if got := rep.json(t)["state"]; got != "closed" {
		t.Fatalf("state after an answered trial: %v", got)
	}
	if a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}); a.status != http.StatusOK {
		t.Fatalf("acquire after the trial answered: %d %s", a.status, a.body)
	}
}

func TestGuardReportClassesFollowTheClassifier(t *testing.T) {
	t.Parallel()
	// A reported class must count exactly when the daemon's own failures
	// of that class would.
	for _, c := range failure.Classes() {
		if c == failure.None {
			continue
		}
		err := errorForClass(c)
		if got := failure.Classify(err); got != c {
			t.Errorf("errorForClass(%s) classifies as %s", c, got)
		}
	}
	f := setup(t)
	trips := func(class string) bool {
		u := "http://" + strings.ReplaceAll(class, "_", "-") + ".example"
		for range 2 {
			tk := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)["ticket"]
			body := map[string]any{"ticket": tk, "outcome": "failed"}
			if class != "" {
				body["error_class"] = class
			}
			if a := f.do("POST", "/v1/guard/report", body); a.status != http.StatusOK {
				t.Fatalf("report %s: %d %s", class, a.status, a.body)
			}
		}
		return f.s.guard.State(u) == guard.Open
	}
	for _, c := range failure.Classes() {
		if c == failure.None {
			continue
		}
		if got, want := trips(c.String()), c.HostLevel(); got != want {
			t.Errorf("two failures of class %s: open=%v, want %v", c, got, want)
		}
	}
	if !trips("") {
		t.Error("failed without error_class did not count as a host-level failure")
	}
}

func TestGuardBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	good := f.do("POST", "/v1/guard/acquire", map[string]any{"url": "http://a.example"}).json(t)["ticket"].(string)
	long := "http://a.example/" + strings.Repeat("x", maxURLLen)
	cases := []struct {
		name, path string
		body       any
		status     int
		field      string
	}{
		{"malformed JSON", "/v1/guard/acquire", `{"url":`, 400, ""},
		{"not JSON", "/v1/guard/acquire", `url=http://a`, 400, ""},
		{"empty body", "/v1/guard/acquire", ``, 400, ""},
		{"array body", "/v1/guard/acquire", `[1]`, 400, ""},
		{"unknown field", "/v1/guard/acquire", `{"url":"http://a","urls":1}`, 400, "urls"},
		{"wrong type", "/v1/guard/acquire", `{"url":5}`, 400, "url"},
		{"trailing data", "/v1/guard/acquire", `{"url":"http://a"}{"url":"http://b"}`, 400, ""},
		{"missing url", "/v1/guard/acquire", `{}`, 400, "url"},
		{"url without host", "/v1/guard/acquire", `{"url":"http://"}`, 400, "url"},
		{"relative url", "/v1/guard/acquire", `{"url":"/just/a/path"}`, 400, "url"},
		{"too long url", "/v1/guard/acquire", map[string]any{"url": long}, 400, "url"},
		// Just over the limit: the server reads up to it and drains the
		// few bytes left, so the client's write never meets a reset.
		{"oversized body", "/v1/guard/acquire", `{"url":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}`, 413, ""},
		{"unknown ticket", "/v1/guard/report", `{"ticket":"feedface","outcome":"answered"}`, 404, "ticket"},
		{"missing ticket", "/v1/guard/report", `{"outcome":"answered"}`, 400, "ticket"},
		{"missing outcome", "/v1/guard/report", map[string]any{"ticket": good}, 400, "outcome"},
		{"bad outcome", "/v1/guard/report", map[string]any{"ticket": good, "outcome": "exploded"}, 400, "outcome"},
		{"bad class", "/v1/guard/report", map[string]any{"ticket": good, "outcome": "failed", "error_class": "gremlins"}, 400, "error_class"},
		{"class with answered", "/v1/guard/report", map[string]any{"ticket": good, "outcome": "answered", "error_class": "timeout"}, 400, "error_class"},
		{"reset without url", "/v1/guard/reset", `{}`, 400, "url"},
		{"reset bad url", "/v1/guard/reset", `{"url":"ftp//nohost"}`, 400, "url"},
		{"list bad state", "/v1/guard?state=ajar", nil, 400, "state"},
		{"list unknown param", "/v1/guard?stat=open", nil, 400, "stat"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := "POST"
			if c.body == nil {
				method = "GET"
			}
			expectError(t, f.do(method, c.path, c.body), c.status, c.field)
		})
	}
	// None of the bad reports consumed the good ticket.
	if a := f.do("POST", "/v1/guard/report", map[string]any{"ticket": good, "outcome": "answered"}); a.status != 200 {
		t.Fatalf("the ticket was spent by a bad report: %d %s", a.status, a.body)
	}
	if a := f.do("POST", "/v1/guard/report", map[string]any{"ticket": good, "outcome": "answered"}); a.status != 404 {
		t.Fatalf("a second report of one ticket: %d, want 404", a.status)
	}
}

func TestGuardResetClearsAndListShowsState(t *testing.T) {
	t.Parallel()
	f := setup(t)
	u := "https://User:Pass@Reset.Example:443/p?token=abc"
	for range 2 {
		tk := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)["ticket"]
		f.do("POST", "/v1/guard/report", map[string]any{"ticket": tk, "outcome": "failed", "error_class": "timeout"})
	}
	list := f.do("GET", "/v1/guard?state=open", nil)
	var got api.EndpointList
	decodeInto(t, list, &got)
	if len(got.Endpoints) != 1 || got.Endpoints[0].Endpoint != "https://reset.example" || got.Endpoints[0].State != "open" ||
		got.Endpoints[0].RetryAfterSeconds != 30 || got.Endpoints[0].LastFailure != "timeout" {
		t.Fatalf("open endpoints: %+v", got.Endpoints)
	}
	a := f.do("POST", "/v1/guard/reset", map[string]any{"url": u})
	if a.status != http.StatusNoContent || len(a.body) != 0 {
		t.Fatalf("reset: %d %q, want 204 and no body", a.status, a.body)
	}
	if st := f.s.guard.State(u); st != guard.Closed {
		t.Fatalf("state after reset: %v", st)
	}
	for _, secret := range []string{"Pass", "token=abc", "/p"} {
		if strings.Contains(f.logs.String(), secret) {
			t.Fatalf("logs carry %q from the URL:\n%s", secret, f.logs.String())
		}
	}
	if !strings.Contains(f.logs.String(), "guard endpoint reset") || !strings.Contains(f.logs.String(), "endpoint=https://reset.example") {
		t.Fatalf("the reset is not logged with its origin:\n%s", f.logs.String())
	}
	decodeInto(t, f.do("GET", "/v1/guard?state=closed", nil), &got)
	if len(got.Endpoints) != 1 || got.Endpoints[0].State != "closed" {
		t.Fatalf("closed endpoints after reset: %+v", got.Endpoints)
	}
}

func TestGuardResetRefusesOtherSchemes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, u := range []string{"ftp://x.example/", "file:///etc/passwd", "gopher://x.example:70/"} {
		expectError(t, f.do("POST", "/v1/guard/reset", map[string]any{"url": u}), http.StatusBadRequest, "url")
	}
	var got api.EndpointList
	decodeInto(t, f.do("GET", "/v1/guard", nil), &got)
	if len(got.Endpoints) != 0 {
		t.Fatalf("a refused reset left records: %+v", got.Endpoints)
	}
}

func TestGuardTicketLeaseExpiryFreesTheTrial(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.TicketLease = time.Minute })
	const u = "http://flaky.example"
	for range 2 {
		tk := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)["ticket"]
		f.do("POST", "/v1/guard/report", map[string]any{"ticket": tk, "outcome": "failed"})
	}
	f.clock.Advance(30 * time.Second)
	trial := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)
	if trial["trial"] != true || trial["lease_seconds"] != float64(60) {
		t.Fatalf("trial ticket: %v", trial)
	}
	// The client holding the trial crashes. Until the lease ends, everyone
	// else keeps failing fast.
	f.clock.Advance(59 * time.Second)
	f.s.expireTickets()
	expectError(t, f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}), http.StatusServiceUnavailable, "")
	f.clock.Advance(time.Second)
	f.s.expireTickets()
	next := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u})
	if next.status != http.StatusOK || next.json(t)["trial"] != true {
		t.Fatalf("after the lease ended the trial was not free: %d %s", next.status, next.body)
	}
	// The expired ticket is gone for good.
	expectError(t, f.do("POST", "/v1/guard/report", map[string]any{"ticket": trial["ticket"], "outcome": "answered"}), http.StatusNotFound, "ticket")
}

func TestGuardTicketTableIsBounded(t *testing.T) {
	t.Parallel()
	// One client (this test, from one address) holds a quarter of the
	// table at most.
	f := setup(t, func(c *Config) { c.MaxTickets = 8 })
	for i := range 2 {
		if a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": "http://many.example"}); a.status != 200 {
			t.Fatalf("acquire %d: %d", i, a.status)
		}
	}
	a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": "http://many.example"})
	expectError(t, a, http.StatusTooManyRequests, "")
	if f.s.tickets.len() != 2 {
		t.Fatalf("%d tickets held, want 2", f.s.tickets.len())
	}
	// Four clients together fill the table; a fifth is refused too.
	g := guard.New(guard.Config{})
	ticket := func() *guard.Ticket {
		tk, err := g.AcquireExempt("http://x.example")
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	tt := newTicketTable(time.Minute, 8, time.Now)
	for _, c := range []string{"a", "a", "b", "b", "c", "c", "d", "d"} {
		if _, _, ok := tt.add(ticket(), c); !ok {
			t.Fatalf("client %s refused below its share", c)
		}
	}
	if _, _, ok := tt.add(ticket(), "e"); ok {
		t.Fatal("a full table took one more ticket")
	}
	// A report frees the client's share.
	for id := range tt.m {
		if tt.m[id].client == "a" {
			tt.take(id)
			break
		}
	}
	if _, _, ok := tt.add(ticket(), "a"); !ok {
		t.Fatal("a client under its share again was refused")
	}
}

func TestGuardExemptAcquireIsNeverRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const u = "http://down.example"
	for range 2 {
		tk := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)["ticket"]
		f.do("POST", "/v1/guard/report", map[string]any{"ticket": tk, "outcome": "failed"})
	}
	a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u, "exempt": true})
	if a.status != http.StatusOK || a.json(t)["exempt"] != true {
		t.Fatalf("exempt acquire on an open endpoint: %d %s", a.status, a.body)
	}
}

func decodeInto(t *testing.T, a answer, v any) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	if err := jsonUnmarshal(a.body, v); err != nil {
		t.Fatalf("decoding %s: %v", a.body, err)
	}
}

func TestGuardResetAll(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Guard.MaxProbes = -1 })
	urls := []string{"http://a.example/", "https://b.example:8443/x"}
	var old any
	for _, u := range urls {
		for range 2 {
			a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)
			f.do("POST", "/v1/guard/report", map[string]any{"ticket": a["ticket"], "outcome": "failed", "error_class": "timeout"})
		}
	}
	f.clock.Advance(30 * time.Second)
	old = f.do("POST", "/v1/guard/acquire", map[string]any{"url": urls[0]}).json(t)["ticket"] // a's trial
	if a := f.do("POST", "/v1/guard/reset-all", nil); a.status != http.StatusNoContent {
		t.Fatalf("reset-all: %d %s", a.status, a.body)
	}
	for _, u := range urls {
		if a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}); a.status != http.StatusOK {
			t.Fatalf("%s after reset-all: %d %s", u, a.status, a.body)
		}
	}
	// The trial from before counts for nothing: a's record stays closed.
	f.do("POST", "/v1/guard/report", map[string]any{"ticket": old, "outcome": "failed", "error_class": "timeout"})
	if st := f.s.Guard().State(urls[0]); st != guard.Closed {
		t.Errorf("a is %s after a stale trial failed", st)
	}
}

func TestGuardExtendedTrialIsNotFreed(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.TicketLease = time.Minute })
	const u = "http://slow-trial.example"
	for range 2 {
		tk := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)["ticket"]
		f.do("POST", "/v1/guard/report", map[string]any{"ticket": tk, "outcome": "failed"})
	}
	f.clock.Advance(30 * time.Second)
	trial := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)
	id, _ := trial["ticket"].(string)
	if trial["extend"] != "/v1/guard/tickets/"+id+"/extend" {
		t.Fatalf("acquire does not say how to extend: %v", trial)
	}
	// The holder's request runs long; it extends twice before each lease
	// would end, so nobody else is granted the trial meanwhile.
	for range 2 {
		f.clock.Advance(50 * time.Second)
		ext := f.do("POST", "/v1/guard/tickets/"+id+"/extend", nil)
		if ext.status != http.StatusOK || ext.json(t)["lease_seconds"] != float64(60) {
			t.Fatalf("extend: %d %s", ext.status, ext.body)
		}
		f.s.expireTickets()
		expectError(t, f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}), http.StatusServiceUnavailable, "")
	}
	if r := f.do("POST", "/v1/guard/report", map[string]any{"ticket": id, "outcome": "answered"}); r.status != http.StatusOK {
		t.Fatalf("report after extends: %d %s", r.status, r.body)
	}
	// A reported ticket cannot be extended; neither can a made-up one.
	expectError(t, f.do("POST", "/v1/guard/tickets/"+id+"/extend", nil), http.StatusNotFound, "ticket")
	expectError(t, f.do("POST", "/v1/guard/tickets/XYZ/extend", nil), http.StatusBadRequest, "ticket")
}

func TestGuardLapsedTicketCannotBeExtended(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.TicketLease = time.Minute })
	id := f.do("POST", "/v1/guard/acquire", map[string]any{"url": "http://lapsed.example"}).json(t)["ticket"].(string)
	f.clock.Advance(time.Minute)
	// Not yet swept, but the lease is over: the ticket is as good as released.
	expectError(t, f.do("POST", "/v1/guard/tickets/"+id+"/extend", nil), http.StatusNotFound, "ticket")
}
