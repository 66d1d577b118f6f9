package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/server"
)

// actionsFixture is a daemon with a token and something for every
// dashboard action to act on: an open endpoint, a host in backoff, an
// item waiting an hour and one to drop.
type actionsFixture struct {
	*fixture
	bearer []string
	dead   string // the open endpoint
}

func newActionsFixture(t *testing.T) *actionsFixture {
	t.Helper()
	f := setup(t, func(c *server.Config) { c.Token = loginToken })
	af := &actionsFixture{fixture: f, bearer: []string{"Authorization", "Bearer " + loginToken}}
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	af.dead = dead.URL()
	af.trip(af.dead)
	f.do("POST", "/v1/hosts/ok.example/touch", map[string]any{"ok": true}, af.bearer...)
	for range 2 {
		f.do("POST", "/v1/hosts/down.example/touch", map[string]any{"ok": false}, af.bearer...)
	}
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{
		{"id": "w1", "not_before": f.clock.Now().Add(time.Hour), "payload": "aGVsbG8gd29ybGQ="},
		{"id": "d1"},
	}}, af.bearer...)
	return af
}

func (af *actionsFixture) trip(u string) {
	for range 2 {
		af.do("GET", fetchPath(u+"/"), nil, af.bearer...)
	}
}

func (af *actionsFixture) status() statusReport {
	var rep statusReport
	decodeInto(af.t, af.do("GET", "/v1/status", nil, af.bearer...), &rep)
	return rep
}

// itemNextAt is when item id is next due, zero when it is gone.
func (af *actionsFixture) itemNextAt(id string) (time.Time, bool) {
	a := af.do("GET", "/v1/items/"+id, nil, af.bearer...)
	if a.status == http.StatusNotFound {
		return time.Time{}, false
	}
	var it struct {
		NextAt time.Time `json:"next_at"`
	}
	decodeInto(af.t, a, &it)
	return it.NextAt, true
}

// sourcePaused says whether the report shows source name paused on its own.
func sourcePaused(rep statusReport, name string) bool {
	for _, s := range rep.Budget.Sources {
		if s.Name == name {
			return s.Paused
		}
	}
	return false
}

func (af *actionsFixture) login(b *browser) {
	af.t.Helper()
	b.do("opening the dashboard", chromedp.Navigate(af.api+"/"))
	b.waitFor("the login form", `document.querySelector("form#login") !== null`)
	b.do("logging in",
		chromedp.SendKeys(chromedp.CSS("#token"), loginToken),
		chromedp.Submit(chromedp.CSS("form#login")))
	b.waitFor("the dashboard", `document.querySelector("#panels") !== null && Number(document.body.dataset.refreshes) >= 2`)
}

// button is an expression: the button of the action with key.
func button(key string, confirmed bool) string {
	sel := "button[data-action=" + jsString(key) + "]"
	if confirmed {
		sel += "[data-confirmed]"
	}
	return "document.querySelector(" + jsString(sel) + ")"
}

// click clicks the action's button as an operator does and, for a wide
// action, the confirm it turns into; then it waits until the page shows
// shown, at most two refreshes later (the one under way and the next).
func click(t *testing.T, b *browser, key string, confirm bool, shown string) {
	t.Helper()
	b.waitFor("the button "+key, button(key, false)+" !== null")
	before, err := eval[int](b, `Number(document.body.dataset.refreshes)`)
	if err != nil {
		t.Fatal(err)
	}
	b.do("clicking "+key, chromedp.Evaluate[chromedp.Void](button(key, false)+".click()"))
	if confirm {
		b.waitFor("the confirm of "+key, button(key, true)+" !== null")
		b.do("confirming "+key, chromedp.Evaluate[chromedp.Void](button(key, true)+".click()"))
	}
	b.waitFor("the effect of "+key, shown)
	after, err := eval[int](b, `Number(document.body.dataset.refreshes)`)
	if err != nil {
		t.Fatal(err)
	}
	if after-before > 2 {
		t.Errorf("%s took %d refreshes to show; want at most 2", key, after-before)
	}
}

func TestDashboardActionsInABrowser(t *testing.T) {
	af := newActionsFixture(t)
	b := newBrowser(t, 1400, 1800)
	af.login(b)
	b.waitFor("the open endpoint", panelHas("endpoints", af.dead))
	b.waitFor("the item list", panelHas("itemlist", "w1")+" && "+panelHas("itemlist", "d1"))
	// Each action shows the command that does the same.
	for _, want := range [][2]string{{"endpoints", "hostguard reset " + af.dead}, {"endpoints", "hostguard reset --all"},
		{"hosts", "hostguard hosts --reset down.example"}, {"budget", "hostguard budget pause"},
		{"budget", "hostguard budget pause --source indexer"},
		{"itemlist", "hostguard items due-now w1"}, {"itemlist", "hostguard items forget d1"}} {
		if !b.mustEval(panelHas(want[0], want[1])) {
			t.Errorf("panel %s does not show %q", want[0], want[1])
		}
	}
	if labels, err := eval[string](b, `[...document.querySelectorAll("#hosts thead th")].map((e) => e.textContent).join("|")`); err != nil ||
		labels != "host|guard|state|failures in a row|retry in|last success|last failure|recent (this node)|action" {
		t.Errorf("the hosts' columns are %q (%v)", labels, err)
	}
	// The open endpoint's host is unknown to the tracker, and the host in
	// backoff has no endpoint: each has its row, both on top, the one with
	// an open endpoint first.
	if got, err := eval[string](b, `[...document.querySelectorAll("#endpoints tbody tr.host")].map((r) => r.textContent).join("\n")`); err != nil ||
		!regexp.MustCompile(`^127\.0\.0\.1 guard: 1 open host tracker: no failure recorded\ndown\.example guard: closed host tracker: backoff, retry in \d+ s Clear backoff hostguard hosts --reset down\.example$`).MatchString(got) {
		t.Errorf("the endpoints panel's host rows say %q (%v)", got, err)
	}
	// "Due now" is one word and one count: the queue's summary and its
	// first bar, from one snapshot.
	if got, err := eval[string](b, `[...document.querySelectorAll("#queue .counts span")].map((s) => s.textContent).join("|") + " / " +
		[...document.querySelector("#queue .hist").children].filter((c) => c.tagName === "SPAN").slice(0, 2).map((s) => s.textContent).join("=")`); err != nil ||
		got != "2 items|1 due now / due now=1" {
		t.Errorf("the queue says %q (%v); want \"2 items|1 due now / due now=1\"", got, err)
	}
	// The tracker does not know the open endpoint's host: the Hosts panel
	// says where its state is rather than look as if all were well.
	if !b.mustEval(`document.querySelector("#hosts .guard-only") !== null && ` + panelHas("hosts", "Open endpoints on 127.0.0.1: the guard's view, under Endpoints.")) {
		t.Error("the Hosts panel does not point to the guard's view of a host it does not know")
	}
	b.screenshot("actions-before")

	click(t, b, "reset "+af.dead, false, panelHas("endpoints", "Every endpoint is closed"))
	if rep := af.status(); rep.Guard.ByState["open"] != 0 {
		t.Errorf("after Retry now the guard has %v", rep.Guard.ByState)
	}

	// Retry all asks first; cancelling changes nothing.
	af.trip(af.dead)
	b.waitFor("the endpoint open again", panelHas("endpoints", af.dead))
	b.do("asking to retry all", chromedp.Evaluate[chromedp.Void](button("reset-all", false)+".click()"))
	b.waitFor("the confirm", button("reset-all", true)+" !== null && "+panelHas("endpoints", "Forget the failures of every endpoint?"))
	b.screenshot("actions-confirm")
	b.do("cancelling", chromedp.Evaluate[chromedp.Void](`document.querySelector("button[data-cancel]").click()`))
	b.waitFor("the confirm gone", button("reset-all", true)+" === null")
	if af.status().Guard.ByState["open"] != 1 {
		t.Fatal("a cancelled Retry all reset the guard")
	}
	click(t, b, "reset-all", true, panelHas("endpoints", "Every endpoint is closed"))

	click(t, b, "host down.example", false, panelHas("hosts", "Every known host answered last time"))
	if rep := af.status(); rep.Hosts.Unhealthy != 0 {
		t.Errorf("after Clear backoff %d hosts are unhealthy", rep.Hosts.Unhealthy)
	}

	click(t, b, "pause", true, panelHas("budget", "background work is paused"))
	if !af.status().Budget.Paused {
		t.Error("Pause all did not pause the budget")
	}
	click(t, b, "resume", false, "!"+panelHas("budget", "background work is paused"))
	if af.status().Budget.Paused {
		t.Error("Resume did not resume the budget")
	}

	// One source paused, then resumed: no confirm, the other sources go on.
	click(t, b, "pause-source indexer", false, button("resume-source indexer", false)+" !== null")
	if rep := af.status(); !sourcePaused(rep, "indexer") || rep.Budget.Paused {
		t.Error("Pause on the indexer row did not pause the indexer alone")
	}
	if !b.mustEval(panelHas("budget", "hostguard budget resume --source indexer")) {
		t.Error("the paused source does not show the command that resumes it")
	}
	click(t, b, "resume-source indexer", false, button("pause-source indexer", false)+" !== null")
	if sourcePaused(af.status(), "indexer") {
		t.Error("Resume on the indexer row did not resume it")
	}

	// The payload is shown decoded, as text.
	b.do("showing w1's payload", chromedp.Evaluate[chromedp.Void](`document.querySelector("button[data-payload=w1]").click()`))
	b.waitFor("the payload", panelHas("itemlist", "hello world"))

	click(t, b, "due w1", false, `!document.querySelector("#itemlist .body").textContent.includes("in 1 h")`)
	if at, ok := af.itemNextAt("w1"); !ok || at.After(af.clock.Now()) {
		t.Errorf("after Due now w1 is due at %v (known %v); want now, %v", at, ok, af.clock.Now())
	}
	click(t, b, "forget d1", true, `!document.querySelector("#itemlist .body").textContent.includes("d1")`)
	if _, ok := af.itemNextAt("d1"); ok {
		t.Error("Drop left d1 in the queue")
	}
	b.screenshot("actions-after")
	// The login form comes with 401, which the browser notes.
	b.noConsoleProblems("status of 401 (Unauthorized) (" + af.api + "/:1)")

	logs := af.logs.String()
	for _, route := range []string{"POST /v1/guard/reset", "POST /v1/guard/reset-all", "POST /v1/hosts/{name}/reset",
		"POST /v1/budget/pause", "POST /v1/budget/sources/{name}/pause", "POST /v1/items/{id}/due-now", "DELETE /v1/items/{id}"} {
		if !strings.Contains(logs, `route="`+route+`" by="session `) {
			t.Errorf("the log does not say the session did %s", route)
		}
	}
	if strings.Contains(logs, loginToken) {
		t.Error("the token reached the log")
	}
}

// TestDashboardActionsRefuseAnotherOrigin: logged in, the browser visits
// a page on another port of the same host (which gets the session cookie
// sent along) that forges every action, with and without a made-up CSRF
// header, after trying to read the dashboard for the real one. Nothing
// changes.
func TestDashboardActionsRefuseAnotherOrigin(t *testing.T) {
	af := newActionsFixture(t)
	wNext, _ := af.itemNextAt("w1")
	forged := []struct{ method, path, body string }{
		{"POST", "/v1/guard/reset", fmt.Sprintf(`{"url":%q}`, af.dead)},
		{"POST", "/v1/guard/reset-all", ""},
		{"POST", "/v1/hosts/down.example/reset", ""},
		{"POST", "/v1/budget/pause", `{"paused":true}`},
		{"POST", "/v1/budget/sources/indexer/pause", `{"paused":true}`},
		{"POST", "/v1/items/w1/due-now", ""},
		{"DELETE", "/v1/items/d1", ""},
	}
	var js strings.Builder
	for _, fg := range forged {
		u := af.api + fg.path
		// no-cors sends a simple request (the cookie goes along); cors
		// with the header needs a preflight the daemon never grants.
		fmt.Fprintf(&js, "tries.push(fetch(%q, {method: %q, credentials: \"include\", mode: \"no-cors\", body: %q || undefined}).catch(() => {}));\n", u, fg.method, fg.body)
		fmt.Fprintf(&js, "tries.push(fetch(%q, {method: %q, credentials: \"include\", headers: {\"X-Hostguard-CSRF\": token, \"Content-Type\": \"application/json\"}, body: %q || undefined}).catch(() => {}));\n", u, fg.method, fg.body)
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>evil</title><script>
let token = "x";
fetch(%q, {credentials: "include"}).then((r) => r.text()).then((t) => { const m = t.match(/"csrf":"([^"]+)"/); if (m) token = m[1]; document.title = "read"; })
  .catch(() => {}).finally(() => { const tries = [];
%s
  Promise.all(tries).then(() => { document.title = "sent " + tries.length; }); });
</script>`, af.api+"/", js.String())
	}))
	t.Cleanup(evil.Close)

	b := newBrowser(t, 1400, 1000)
	af.login(b)
	b.do("visiting the other origin", chromedp.Navigate(evil.URL+"/"))
	b.waitFor("every forged request sent", fmt.Sprintf(`document.title === "sent %d"`, 2*len(forged)))
	if b.mustEval(`document.title === "read"`) {
		t.Error("the other origin read the dashboard")
	}

	rep := af.status()
	if rep.Guard.ByState["open"] != 1 {
		t.Errorf("a forged request reset the guard: %v", rep.Guard.ByState)
	}
	if rep.Hosts.Backoff != 1 {
		t.Errorf("a forged request reset the host: %d in backoff", rep.Hosts.Backoff)
	}
	if rep.Budget.Paused {
		t.Error("a forged request paused the budget")
	}
	if sourcePaused(rep, "indexer") {
		t.Error("a forged request paused a source")
	}
	if at, ok := af.itemNextAt("w1"); !ok || !at.Equal(wNext) {
		t.Errorf("a forged request moved w1 to %v (known %v); it was due %v", at, ok, wNext)
	}
	if _, ok := af.itemNextAt("d1"); !ok {
		t.Error("a forged request dropped d1")
	}
	if strings.Contains(af.logs.String(), `by="session `) {
		t.Error("a forged request was taken as the session's action")
	}
	// The session still acts from the daemon's own page.
	b.do("back to the dashboard", chromedp.Navigate(af.api+"/"))
	b.waitFor("the dashboard again", `document.querySelector("#panels") !== null`)
	click(t, b, "host down.example", false, panelHas("hosts", "Every known host answered last time"))
}

// TestDashboardShowsTheOpenFirst: with 30 endpoints, 4 of them open and
// 24 half-open that nobody asks for, the 4 open ones are on top, visible
// without scrolling at 1400×1800, and the 24 are one line; the page
// fits a phone's width too. It leaves the screenshots CI keeps.
func TestDashboardShowsTheOpenFirst(t *testing.T) {
	f := setup(t)
	// ClosedPort may hand out a port twice (it is free again once
	// found): thirty distinct ones make thirty endpoints.
	ports := make([]string, 0, 30)
	seen := map[string]bool{}
	for len(ports) < 30 {
		p := faulthost.ClosedPort()
		t.Cleanup(p.Close)
		if !seen[p.URL()] {
			seen[p.URL()] = true
			ports = append(ports, p.URL())
		}
	}
	report := func(u, outcome string) {
		t.Helper()
		var tk struct {
			Ticket string `json:"ticket"`
		}
		decodeInto(t, f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}), &tk)
		body := map[string]any{"ticket": tk.Ticket, "outcome": outcome}
		if outcome == "failed" {
			body["error_class"] = "refused"
		}
		if a := f.do("POST", "/v1/guard/report", body); a.status != http.StatusOK {
			t.Fatalf("report: %d %s", a.status, a.body)
		}
	}
	for _, u := range ports[:24] {
		report(u, "failed")
		report(u, "failed")
	}
	// Their open period ends: half-open, each waiting for a request.
	f.clock.Advance(2 * time.Minute)
	for _, u := range ports[24:28] {
		report(u, "failed")
		report(u, "failed")
	}
	for _, u := range ports[28:] {
		report(u, "answered")
	}
	// The host of every endpoint is in backoff with the tracker too.
	f.do("POST", "/v1/hosts/ok.example/touch", map[string]any{"ok": true})
	for range 2 {
		f.do("POST", "/v1/hosts/127.0.0.1/touch", map[string]any{"ok": false})
	}
	rep := guardReportOf(t, f)
	if rep.Guard.Endpoints != 30 || rep.Guard.ByState["open"] != 4 || rep.Guard.ByState["half-open"] != 24 {
		t.Fatalf("the guard holds %d endpoints, %v; want 30 with 4 open and 24 half-open", rep.Guard.Endpoints, rep.Guard.ByState)
	}

	b := newBrowser(t, 1400, 1800)
	b.do("opening the dashboard", chromedp.Navigate(f.api+"/"))
	b.waitFor("the open endpoints", panelHas("endpoints", ports[27]))
	open := `[...document.querySelectorAll("#endpoints tbody tr.endpoint")]`
	if n, err := eval[int](b, open+`.length`); err != nil || n != 4 {
		t.Errorf("the endpoints table has %d endpoint rows (%v); want the 4 open ones", n, err)
	}
	if !b.mustEval(open + `.every((r) => r.querySelector(".state-open") && r.getBoundingClientRect().bottom <= window.innerHeight)`) {
		t.Error("an open endpoint is not visible without scrolling at 1400×1800")
	}
	if !b.mustEval(panelHas("endpoints", "24 half-open endpoints with no request waiting")) {
		t.Error("the 24 idle half-open endpoints are not collapsed into a count")
	}
	if !b.mustEval(panelHas("endpoints", "30 known") + " && " + panelHas("endpoints", "4 open") + " && " + panelHas("endpoints", "24 half-open")) {
		t.Error("the counts do not match the rows")
	}
	// The labels, pinned: the same words as hostguard status.
	labels, err := eval[string](b, `[...document.querySelectorAll("#endpoints thead th")].map((e) => e.textContent).join("|")`)
	if want := "endpoint|state|since|failures|last failure|probe or trial|tickets|action"; err != nil || labels != want {
		t.Errorf("the endpoints' columns are %q (%v); want %q", labels, err, want)
	}
	if !b.mustEval(open + `.every((r) => r.cells[5].textContent.startsWith("trial in "))`) {
		t.Error("an open endpoint's time left is not said as \"trial in\"")
	}
	// One row per host says what both the guard and the host tracker
	// think, and heads the endpoints on the host: the open host first,
	// then ok.example... which has no failure, so it has no row at all.
	hostRows := `[...document.querySelectorAll("#endpoints tbody tr.host")]`
	if got, err := eval[string](b, hostRows+`.map((r) => r.textContent).join("\n")`); err != nil ||
		!regexp.MustCompile(`^127\.0\.0\.1 guard: 4 open, 24 half-open \(24 with no request waiting\) host tracker: backoff, retry in \d+ s Clear backoff hostguard hosts --reset 127\.0\.0\.1$`).MatchString(got) {
		t.Errorf("the host rows say %q (%v); want one for 127.0.0.1 with both views", got, err)
	}
	if !b.mustEval(`document.querySelector("#endpoints tbody tr.host").nextElementSibling.classList.contains("endpoint")`) {
		t.Error("the host's row does not head its endpoints")
	}
	if !b.mustEval(`[...document.querySelectorAll("#hosts tbody tr")].some((r) => r.cells[0].textContent === "127.0.0.1" && r.cells[1].textContent === "4 open, 24 half-open")`) {
		t.Error("the host's row does not show the guard's endpoints on it")
	}
	if !b.mustEval(panelHas("budget", "head-poll reserve (kept back") + ` && document.querySelector("#budget .legend .used") !== null`) {
		t.Error("the budget's two-part bars have no legend")
	}
	b.screenshot("dashboard-30-endpoints-1400x1800")
	b.noConsoleProblems()

	phone := newBrowser(t, 390, 844)
	phone.do("opening the dashboard", chromedp.Navigate(f.api+"/"))
	phone.waitFor("the open endpoints", panelHas("endpoints", ports[27]))
	if w, err := eval[int](phone, `document.scrollingElement.scrollWidth`); err != nil || w > 390 {
		t.Errorf("the page is %d px wide at a 390 px viewport (%v)", w, err)
	}
	phone.screenshot("dashboard-30-endpoints-390x844")
	phone.noConsoleProblems()
}

func guardReportOf(t *testing.T, f *fixture) statusReport {
	t.Helper()
	var rep statusReport
	decodeInto(t, f.do("GET", "/v1/status", nil), &rep)
	return rep
}

// TestDashboardQueueWords: the queue's summary and its first bar say "due
// now" of the same items, and a lease that ran out is said apart, as
// "lease expired", not counted as due.
func TestDashboardQueueWords(t *testing.T) {
	f := setup(t)
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "l1"}}})
	if ls := f.claim(t, 1, 60); len(ls) != 1 {
		t.Fatalf("claimed %d items; want 1", len(ls))
	}
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "d1"}, {"id": "d2"}}})
	f.clock.Advance(2 * time.Minute) // l1's lease runs out; d1 and d2 wait
	b := newBrowser(t, 1400, 1000)
	b.do("opening the dashboard", chromedp.Navigate(f.api+"/"))
	b.waitFor("the queue", panelHas("queue", "due now"))
	got, err := eval[string](b, `[...document.querySelectorAll("#queue .counts span")].map((s) => s.textContent).join("|") + " / " +
		[...document.querySelector("#queue .hist").children].filter((c) => c.tagName === "SPAN").slice(0, 2).map((s) => s.textContent).join("=")`)
	if want := "3 items|2 due now|oldest due for 2 m|1 lease expired / due now=2"; err != nil || got != want {
		t.Errorf("the queue says %q (%v); want %q", got, err, want)
	}
	b.noConsoleProblems()
}
