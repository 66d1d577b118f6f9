package server

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/waitfor"
)

func TestStatusPageAndReport(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Version = "v1.2.3"; c.StoreKind = "sqlite" })
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	for range 2 {
		f.do("GET", fetchPath(dead.URL()+"/"), nil)
	}
	opened := f.clock.Now()
	f.do("POST", "/v1/hosts/ok.example/touch", map[string]any{"ok": true})
	hostile := "<script>alert(1)</script>.example"
	for _, ok := range []bool{true, false, false} {
		if a := f.do("POST", "/v1/hosts/"+url.PathEscape(hostile)+"/touch", map[string]any{"ok": ok}); a.status != 200 {
			t.Fatalf("touch: %d %s", a.status, a.body)
		}
	}
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "i1"}, {"id": "i2"}}})
	l := f.claim(t, 1, 30)
	f.do("POST", itemPath(l[0].ID, "fail"), map[string]any{"lease": l[0].Lease, "class": "not_found"})

	var rep statusReport
	decodeInto(t, f.do("GET", "/v1/status", nil), &rep)
	if rep.Guard.ByState["open"] != 1 || rep.Guard.NotClosed[0].Since == nil || !rep.Guard.NotClosed[0].Since.Equal(opened) {
		t.Errorf("open endpoint: %+v; want open since %v", rep.Guard.NotClosed, opened)
	}
	if rep.Hosts == nil || rep.Hosts.Backoff != 1 || len(rep.Hosts.InBackoff) != 1 || len(rep.Hosts.UnhealthyHosts) != 1 ||
		rep.Hosts.UnhealthyHosts[0].Available {
		t.Fatalf("host summary: %+v", rep.Hosts)
	}

	// Later the endpoint's period is over and the host's backoff too; the
	// host is still unhealthy and still listed.
	f.clock.Advance(90 * time.Second)
	rep = statusReport{}
	decodeInto(t, f.do("GET", "/v1/status", nil), &rep)
	if rep.Version != "v1.2.3" || rep.Store != "sqlite" || rep.Node == "" || rep.UptimeSeconds != 90 {
		t.Errorf("header fields: version %q store %q node %q uptime %v", rep.Version, rep.Store, rep.Node, rep.UptimeSeconds)
	}
	if rep.Guard.ByState["half-open"] != 1 || len(rep.Guard.NotClosed) != 1 || rep.Guard.NotClosed[0].Endpoint.Endpoint != dead.URL() {
		t.Fatalf("guard summary: %+v", rep.Guard)
	}
	// Half-open since its open period ended, 30 s after it opened.
	if e := rep.Guard.NotClosed[0]; e.Since == nil || !e.Since.Equal(opened.Add(30*time.Second)) || e.LastFailure == "" {
		t.Errorf("endpoint %+v: want half-open since %v with its last failure", e, opened.Add(30*time.Second))
	}
	if rep.Hosts == nil || rep.Hosts.Backoff != 0 || rep.Hosts.Unhealthy != 1 || len(rep.Hosts.UnhealthyHosts) != 1 {
		t.Fatalf("host summary: %+v", rep.Hosts)
	}
	h := rep.Hosts.UnhealthyHosts[0]
	var got []string
	for _, o := range h.Recent {
		got = append(got, o.Outcome)
	}
	if h.Display != hostile || strings.Join(got, ",") != "success,failure,failure" || h.ConsecutiveFails != 2 {
		t.Errorf("unhealthy host %q: %d in a row, recent %v; want success,failure,failure", h.Display, h.ConsecutiveFails, got)
	}
	if rep.Items == nil || rep.Items.Total != 2 || rep.Items.ByClass["not_found"] != 1 {
		t.Fatalf("items summary: %+v", rep.Items)
	}

	a := f.do("GET", "/", nil)
	page := string(a.body)
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
		t.Fatalf("status page: %d %s", a.status, a.header.Get("Content-Type"))
	}
	csp := a.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'sha256-", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q allows any inline code", csp)
	}
	// The page starts from the report itself, as JSON the script reads.
	data, boot := pageData(t, page)
	if boot.RefreshMS != DefaultDashboardRefresh.Milliseconds() || boot.Session ||
		len(boot.Report.Guard.NotClosed) != 1 || boot.Report.Hosts.UnhealthyHosts[0].Display != hostile {
		t.Errorf("initial data: refresh %d, session %v, report %+v", boot.RefreshMS, boot.Session, boot.Report.Guard)
	}
	if strings.Contains(page, hostile) || strings.Contains(page, "<script>alert") {
		t.Error("a host name reached the page unescaped")
	}
	if !strings.Contains(page, "<noscript>") {
		t.Error("the page says nothing without JavaScript")
	}
	shell := strings.Replace(page, data, "", 1)
	for _, ext := range []string{`src="http`, `href="http`, `src="/`, `href="//`, "@import", "url(", "fetch(\"http"} {
		if strings.Contains(shell, ext) {
			t.Errorf("status page loads something (%q); it must be self-contained", ext)
		}
	}
}

// pageData is the JSON the dashboard starts from.
func pageData(t *testing.T, page string) (string, dashboardData) {
	t.Helper()
	_, data, ok := strings.Cut(page, `<script type="application/json" id="hg-data">`)
	data, _, ok2 := strings.Cut(data, "</script>")
	if !ok || !ok2 {
		t.Fatal("the page carries no initial data")
	}
	var boot dashboardData
	if err := json.Unmarshal([]byte(data), &boot); err != nil {
		t.Fatalf("initial data: %v", err)
	}
	return data, boot
}

// dashboardReport is the report GET / starts the dashboard from.
func (f *fixture) dashboardReport() statusReport {
	f.t.Helper()
	a := f.do("GET", "/", nil)
	if a.status != 200 {
		f.t.Fatalf("GET /: %d %s", a.status, a.body)
	}
	_, boot := pageData(f.t, string(a.body))
	return boot.Report
}

func TestShortError(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"": "",
		`feed: idx: page at offset 0: Get "https://idx.example/api?t=search&apikey=REDACTED": dial tcp 127.0.0.1:9: connect: connection refused`: "feed: idx: page at offset 0: Get (url): dial tcp 127.0.0.1:9: connect: connection refused",
		"upstream said 500 at http://u:p@x.example/a?b=c, giving up":                                                                             "upstream said 500 at (url) giving up",
		strings.Repeat("é", 100): strings.Repeat("é", 80) + "…",
	} {
		if got := shortError(in); got != want {
			t.Errorf("shortError(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHostHistoryIsBounded(t *testing.T) {
	t.Parallel()
	h := newHostHistory(3)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range outcomesPerHost + 5 {
		h.add("a", outcomeKind(i%3), at.Add(time.Duration(i)*time.Second))
	}
	r := h.recent("a")
	if len(r) != outcomesPerHost || !r[0].At.Equal(at.Add(5*time.Second)) || !r[len(r)-1].At.Equal(at.Add((outcomesPerHost+4)*time.Second)) {
		t.Fatalf("ring of a: %d entries, from %v to %v", len(r), r[0].At, r[len(r)-1].At)
	}
	h.add("b", outcomeSuccess, at)
	h.add("c", outcomeSuccess, at)
	h.add("a", outcomeSuccess, at) // a is now the most recent
	h.add("d", outcomeSuccess, at) // so b goes
	if h.recent("b") != nil || h.recent("a") == nil || h.recent("c") == nil || h.recent("d") == nil {
		t.Fatal("the least recently touched host was not the one forgotten")
	}
}

// The dashboard shows a feed's last error in short: the indexer's URL,
// which may carry a key or a query, is left out.
func TestStatusFeedErrorsAreShort(t *testing.T) {
	t.Parallel()
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	f := setup(t, func(c *Config) {
		c.Feeds = []Feed{{Name: "dead", URL: dead.URL() + "/api?extra=query", APIKey: testAPIKey}}
	})
	waitfor.True(t, 10*time.Second, "the feed never failed", func() bool {
		_, v, _ := f.feedNamed("dead")
		return v.LastError != ""
	})
	_, full, _ := f.feedNamed("dead")
	var rep statusReport
	decodeInto(t, f.do("GET", "/v1/status", nil), &rep)
	if len(rep.Feeds) != 1 || rep.Feeds[0].LastError == "" {
		t.Fatalf("status feeds: %+v", rep.Feeds)
	}
	short := rep.Feeds[0].LastError
	if strings.Contains(short, "://") || strings.Contains(short, "extra=query") || len(short) > 160+len("…") {
		t.Errorf("status feed error %q: want it short and without the URL (the full one is %q)", short, full.LastError)
	}
	if !strings.Contains(full.LastError, "://") {
		t.Logf("GET /v1/feeds error %q has no URL to leave out; the check above proves little", full.LastError)
	}
}

// TestStatusQueueCountsAgreeWithTheBars: the status report's "due now"
// count and its histogram's "now" bar come from one read and count the
// same items, the waiting ones whose time has come; a lease that ran out
// is counted apart, in items.leases_expired.
func TestStatusQueueCountsAgreeWithTheBars(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "l1"}}})
	if ls := f.claim(t, 1, 60); len(ls) != 1 {
		t.Fatalf("claimed %d items; want 1", len(ls))
	}
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "d1"}, {"id": "d2"}, {"id": "d3"}}})
	f.clock.Advance(2 * time.Minute) // the lease of l1 runs out
	var rep struct {
		Items struct {
			DueNow        int            `json:"due_now"`
			LeasesExpired int            `json:"leases_expired"`
			ByState       map[string]int `json:"by_state"`
		} `json:"items"`
		ItemsDue struct {
			Buckets []struct {
				Name  string `json:"name"`
				Count int    `json:"count"`
			} `json:"buckets"`
			Waiting int `json:"waiting"`
		} `json:"items_due"`
	}
	decodeInto(t, f.do("GET", "/v1/status", nil), &rep)
	if len(rep.ItemsDue.Buckets) == 0 || rep.ItemsDue.Buckets[0].Name != "now" {
		t.Fatalf("no \"now\" bucket: %+v", rep.ItemsDue)
	}
	if now := rep.ItemsDue.Buckets[0].Count; rep.Items.DueNow != now || now != 3 {
		t.Fatalf("due now %d, the \"now\" bar %d; want both 3", rep.Items.DueNow, now)
	}
	if rep.Items.LeasesExpired != 1 {
		t.Fatalf("leases expired %d; want 1", rep.Items.LeasesExpired)
	}
	if w := rep.Items.ByState["pending"] + rep.Items.ByState["scheduled"]; w != rep.ItemsDue.Waiting {
		t.Fatalf("%d waiting by the counters, %d by the histogram", w, rep.ItemsDue.Waiting)
	}
	var stats struct {
		DueNow int `json:"due_now"`
	}
	decodeInto(t, f.do("GET", "/v1/items/stats", nil), &stats)
	if stats.DueNow != 3 {
		t.Fatalf("GET /v1/items/stats says %d due now; want the status report's 3", stats.DueNow)
	}
	// The metrics say the same: three due, one lease run out, apart.
	text := string(f.do("GET", "/metrics", nil).body)
	for _, want := range []string{"\nhostguard_retry_due_items 3\n", "\nhostguard_retry_expired_leases 1\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", strings.TrimSpace(want))
		}
	}
}
