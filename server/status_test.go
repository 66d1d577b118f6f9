package server

import (
	"net/url"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/internal/faulthost"
)

func TestStatusPageAndReport(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	for range 2 {
		f.do("GET", fetchPath(dead.URL()+"/"), nil)
	}
	f.do("POST", "/v1/hosts/ok.example/touch", map[string]any{"ok": true})
	hostile := "<script>alert(1)</script>.example"
	if a := f.do("POST", "/v1/hosts/"+url.PathEscape(hostile)+"/touch", map[string]any{"ok": false}); a.status != 200 {
		t.Fatalf("touch: %d %s", a.status, a.body)
	}
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "i1"}, {"id": "i2"}}})
	l := f.claim(t, 1, 30)
	f.do("POST", itemPath(l[0].ID, "fail"), map[string]any{"lease": l[0].Lease, "class": "not_found"})

	var rep statusReport
	decodeInto(t, f.do("GET", "/v1/status", nil), &rep)
	if rep.Guard.ByState["open"] != 1 || len(rep.Guard.NotClosed) != 1 || rep.Guard.NotClosed[0].Endpoint != dead.URL() {
		t.Fatalf("guard summary: %+v", rep.Guard)
	}
	if rep.Hosts == nil || rep.Hosts.Backoff != 1 || len(rep.Hosts.InBackoff) != 1 {
		t.Fatalf("host summary: %+v", rep.Hosts)
	}
	if rep.Items == nil || rep.Items.Total != 2 || rep.Items.ByClass["not_found"] != 1 {
		t.Fatalf("items summary: %+v", rep.Items)
	}

	a := f.do("GET", "/", nil)
	page := string(a.body)
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
		t.Fatalf("status page: %d %s", a.status, a.header.Get("Content-Type"))
	}
	for _, want := range []string{
		dead.URL(), `class="open"`, "30s", // the endpoint, open, with its time left
		"&lt;script&gt;alert(1)&lt;/script&gt;.example", // escaped
		"not_found", `http-equiv="refresh"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("a host name reached the page unescaped")
	}
	for _, ext := range []string{"src=", "href=", "@import", "url("} {
		if strings.Contains(page, ext) {
			t.Errorf("status page loads something (%q); it must be self-contained", ext)
		}
	}
}
