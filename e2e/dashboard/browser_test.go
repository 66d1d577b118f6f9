package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/server"
)

// These tests open the dashboard in a real headless Chromium against a
// served daemon. They skip when no Chromium is installed, except under
// CI=true, where .ci/run installs Debian's chromium and a missing one fails.

// browserWait bounds every wait on the page: the machine running the
// tests may be busy, and a refresh is a second here.
const browserWait = 20 * time.Second

// browserRefresh is the dashboard's refresh period in these tests.
const browserRefresh = time.Second

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; .ci/run installs Debian's chromium package")
	}
	t.Skip("chromium is not installed; the dashboard's browser tests need it")
	return ""
}

// screenshotDir is where the tests leave their screenshots:
// $HOSTGUARD_SCREENSHOTS, else bench/out/screenshots under CI, else a
// directory in the system's temporary directory. It is logged.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HOSTGUARD_SCREENSHOTS")
	switch {
	case dir != "":
	case os.Getenv("CI") == "true":
		dir = filepath.Join("..", "..", "bench", "out", "screenshots")
	default:
		dir = filepath.Join(os.TempDir(), "hostguard-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// browser is one headless Chromium tab, with what its pages wrote to the
// console.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []string
	// watchers read event streams of the tab; they end with it.
	watchers sync.WaitGroup
}

func newBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Every page of these tests is on 127.0.0.1; no proxy from the
		// environment may stand in between.
		chromedp.Flag("no-proxy-server", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx}
	// The first action starts the browser; its life is ctx's, with no
	// timeout, and each later action has its own bound.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatal(err)
	}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, fmt.Sprintf("%s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1))
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done; b.watchers.Wait() })
	return b
}

// do runs steps, bounded.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

func (b *browser) mustEval(expr string) bool {
	b.t.Helper()
	v, err := eval[bool](b, expr)
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor waits, bounded, until the expression is true in the page.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	var last error
	if !waitfor.Until(browserWait, func() bool {
		v, err := eval[bool](b, expr)
		last = err
		return err == nil && v
	}) {
		b.screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("after %v the page does not show %s (%s; last error %v)", browserWait, what, expr, last)
	}
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(screenshotDir(b.t), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
}

// noConsoleProblems fails the test for any error, warning or exception
// the pages wrote, a refused Content-Security-Policy among them, but those
// that hold one of the expected texts.
func (b *browser) noConsoleProblems(expected ...string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
next:
	for _, m := range b.console {
		if !strings.HasPrefix(m, "error:") && !strings.HasPrefix(m, "warning:") && !strings.HasPrefix(m, "exception:") {
			continue
		}
		for _, e := range expected {
			if strings.Contains(m, e) {
				continue next
			}
		}
		b.t.Errorf("console: %s", m)
	}
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			fmt.Fprintf(&sb, "\\u%04x", r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// panelHas is an expression: the panel's text holds s.
func panelHas(panel, s string) string {
	return fmt.Sprintf(`document.querySelector("#%s .body").textContent.includes(%s)`, panel, jsString(s))
}

func TestDashboardInABrowser(t *testing.T) {
	f := setup(t, func(c *server.Config) {
		c.Version = "v9.9.9-test"
		c.StoreKind = "sqlite"
	})
	b := newBrowser(t, 1400, 1000)
	b.do("opening the dashboard", chromedp.Navigate(f.api+"/"))
	b.waitFor("the header", `document.querySelector("#meta").textContent.includes("v9.9.9-test")`)
	b.waitFor("an empty endpoints panel", panelHas("endpoints", "Every endpoint is closed"))
	b.waitFor("the budget's sources", panelHas("budget", "unpaced"))
	// A mark that a reload of the page would lose.
	b.do("marking the page", chromedp.Evaluate[chromedp.Void](`window.hgMark = 1`))

	// Trip an endpoint and put a host in backoff through the API; the
	// host's name is markup that must show as text.
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	for range 2 {
		f.do("GET", fetchPath(dead.URL()+"/"), nil)
	}
	hostile := `<img/src=x/onerror=document.title=1>.example`
	for _, ok := range []bool{true, false, false} {
		if a := f.do("POST", "/v1/hosts/"+url.PathEscape(hostile)+"/touch", map[string]any{"ok": ok}); a.status != 200 {
			t.Fatalf("touch: %d %s", a.status, a.body)
		}
	}
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{
		{"id": "b1"}, {"id": "b2", "not_before": f.clock.Now().Add(10 * time.Minute)},
	}})
	before, err := eval[int](b, `Number(document.body.dataset.refreshes)`)
	if err != nil {
		t.Fatal(err)
	}

	shown := strings.Join([]string{
		panelHas("endpoints", dead.URL()), `document.querySelector("#endpoints .state-open") !== null`,
		panelHas("hosts", hostile), panelHas("hosts", "backoff"),
		`document.querySelectorAll("#hosts svg.timeline rect.failure").length === 2`,
		`document.querySelectorAll("#hosts svg.timeline rect.success").length === 1`,
		panelHas("queue", "2 items"), panelHas("queue", "2 waiting"),
		// The schedule in force: the default ladder, and the sightings.
		panelHas("queue", "30 m · 2 h · 8 h · 1 d · 7 d · 30 d"), panelHas("queue", "done items are kept 30 d"),
		panelHas("queue", "commits (SQLite) do not wait for the disk"),
		// The due histogram: one due now, one within the hour.
		`[...document.querySelectorAll("#queue .hist > span")].map((e) => e.textContent).join("|").includes("due now|1|< 1 h|1")`,
	}, " && ")
	// The refresh count when everything first shows: within one refresh
	// means the one that may have been under way when the changes were
	// made, and the next.
	var after int
	if !waitfor.Until(browserWait, func() bool {
		n, err := eval[int](b, `(`+shown+`) ? Number(document.body.dataset.refreshes) : 0`)
		after = n
		return err == nil && n > 0
	}) {
		b.screenshot("failed-changes")
		t.Fatalf("after %v the page does not show the tripped endpoint, the host in backoff with its timeline and the item", browserWait)
	}
	if after-before > 2 {
		t.Errorf("the changes took %d refreshes to show; want at most 2", after-before)
	}
	if !b.mustEval(`window.hgMark === 1`) {
		t.Error("the page reloaded instead of refreshing in place")
	}
	if b.mustEval(`document.title === "1" || document.querySelector("#hosts img") !== null`) {
		t.Error("a host name was rendered as markup")
	}
	if w, err := eval[int](b, `document.scrollingElement.scrollWidth - window.innerWidth`); err != nil || w > 0 {
		t.Errorf("the page is %d px wider than the window (%v)", w, err)
	}
	b.screenshot("dashboard-1400x1000")
	b.noConsoleProblems()

	// When the daemon goes away the page says so and keeps its figures.
	if err := f.stop(); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the failed refresh", `document.querySelector("#refresh.stale") !== null && document.querySelector("#refresh").textContent.includes("refresh failed")`)
	if !b.mustEval(panelHas("endpoints", dead.URL())) {
		t.Error("the figures went away with the daemon")
	}
	b.screenshot("dashboard-refresh-failed")
}

func TestDashboardAtPhoneWidth(t *testing.T) {
	f := setup(t)
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	for range 2 {
		f.do("GET", fetchPath(dead.URL()+"/a-long-path-that-is-not-kept"), nil)
	}
	long := strings.Repeat("very-long-label.", 12) + "example"
	// A success elsewhere first, or outage protection ignores the
	// failures.
	f.do("POST", "/v1/hosts/ok.example/touch", map[string]any{"ok": true})
	for range 2 {
		f.do("POST", "/v1/hosts/"+long+"/touch", map[string]any{"ok": false})
	}
	b := newBrowser(t, 390, 844)
	b.do("opening the dashboard", chromedp.Navigate(f.api+"/"))
	b.waitFor("the host", panelHas("hosts", long))
	b.waitFor("the endpoint", panelHas("endpoints", dead.URL()))
	if !b.mustEval(`window.innerWidth === 390`) {
		t.Fatalf("the viewport is %v wide, not 390", b.mustEval(`window.innerWidth`))
	}
	if w, err := eval[int](b, `document.scrollingElement.scrollWidth`); err != nil || w > 390 {
		t.Errorf("the page is %d px wide at a 390 px viewport (%v): it scrolls sideways", w, err)
	}
	// Every panel is shown, within the width, one above the other.
	for _, id := range []string{"endpoints", "hosts", "queue", "budget", "feeds", "node"} {
		expr := fmt.Sprintf(`(() => { const r = document.getElementById(%q).getBoundingClientRect();
			return r.width > 200 && r.height > 30 && r.left >= 0 && r.right <= window.innerWidth; })()`, id)
		if !b.mustEval(expr) {
			t.Errorf("panel %s is not visible within the phone's width", id)
		}
	}
	b.screenshot("dashboard-390x844")
	b.noConsoleProblems()
}

func TestDashboardLoginInABrowser(t *testing.T) {
	f := setup(t, func(c *server.Config) { c.Token = loginToken })
	b := newBrowser(t, 1400, 1000)
	b.do("opening the dashboard", chromedp.Navigate(f.api+"/"))
	b.waitFor("the login form", `document.querySelector("form#login input[name=token]") !== null`)
	b.screenshot("login")

	b.do("logging in with a wrong token",
		chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"),
		chromedp.Submit(chromedp.CSS("form#login")))
	b.waitFor("the refusal", `document.querySelector("[role=alert]") !== null && document.querySelector("form#login") !== null`)
	if b.mustEval(`document.querySelector("#panels") !== null`) {
		t.Fatal("a wrong token opened the dashboard")
	}

	b.do("logging in with the token",
		chromedp.SendKeys(chromedp.CSS("#token"), loginToken),
		chromedp.Submit(chromedp.CSS("form#login")))
	b.waitFor("the dashboard", `document.querySelector("#panels") !== null && document.body.dataset.refreshes !== undefined`)
	// The page refreshes over the cookie: the figures keep coming.
	b.waitFor("a refresh over the session", `Number(document.body.dataset.refreshes) >= 3 && document.querySelector("#refresh.stale") === null`)

	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{f.api + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	var session *network.Cookie
	for _, c := range res.Cookies {
		if c.Name == dashboardCookie {
			session = c
		}
	}
	if session == nil || !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict || session.Value == loginToken {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, not the token", session)
	}
	if b.mustEval(`document.cookie.includes("` + dashboardCookie + `")`) {
		t.Error("the page's script can read the session cookie")
	}
	b.screenshot("dashboard-after-login")

	b.do("logging out", chromedp.Click(chromedp.CSS("#logout button")))
	b.waitFor("the login form again", `document.querySelector("form#login") !== null`)
	// The login form comes with 401, which the browser notes for the page
	// itself (and for the refused login); nothing else may be there.
	b.noConsoleProblems(
		"status of 401 (Unauthorized) ("+f.api+"/:1)",
		"status of 401 (Unauthorized) ("+f.api+"/login:1)")
}

// A page of another origin on the same host is same-site to the daemon,
// so SameSite=Strict does not keep the session cookie off its requests.
// Logged in, the browser visits such a page, which tries what a forged
// request could: a fetch that resets the guard, a form that pauses the
// budget, an image that makes the daemon fetch. None of it may work.
func TestDashboardSessionRefusesAnotherOrigin(t *testing.T) {
	f := setup(t, func(c *server.Config) { c.Token = loginToken })
	bearer := []string{"Authorization", "Bearer " + loginToken}
	var upstreamHits atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { upstreamHits.Add(1) }))
	t.Cleanup(upstream.Close)
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	for range 2 {
		f.do("GET", fetchPath(dead.URL()+"/"), nil, bearer...)
	}

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>evil</title>
<form id="f" method="post" action="%[1]s/v1/budget/pause" enctype="text/plain"><input name='{"paused":true,"x":"' value='"}'></form>
<script>
const img = new Image();
new Promise((done) => { img.onload = img.onerror = done; img.src = %[2]q; })
  .then(() => fetch(%[3]q, {method: "POST", credentials: "include", mode: "no-cors"}))
  .catch(() => {})
  .finally(() => { document.title = "sent"; document.getElementById("f").submit(); });
</script>`, f.api, f.api+fetchPath(upstream.URL+"/"), f.api+"/v1/guard/reset-all")
	}))
	t.Cleanup(evil.Close)

	b := newBrowser(t, 1400, 1000)
	b.do("opening the dashboard", chromedp.Navigate(f.api+"/"))
	b.waitFor("the login form", `document.querySelector("form#login") !== null`)
	b.do("logging in",
		chromedp.SendKeys(chromedp.CSS("#token"), loginToken),
		chromedp.Submit(chromedp.CSS("form#login")))
	b.waitFor("the dashboard", `document.querySelector("#panels") !== null && document.body.dataset.refreshes !== undefined`)

	// Which forged requests the browser sent, and what the daemon
	// answered those whose answer it reports (an image's JSON answer is
	// blocked before it is reported): proof that they went out, with the
	// cookie, and were refused.
	var mu sync.Mutex
	sent, answered := map[string]bool{}, map[string]int64{}
	pathOf := func(u string) (string, bool) {
		u, ok := strings.CutPrefix(u, f.api)
		u, _, _ = strings.Cut(u, "?")
		return u, ok
	}
	requests := chromedp.Events(b.ctx, network.RequestWillBeSent)
	responses := chromedp.Events(b.ctx, network.ResponseReceived)
	b.watchers.Go(func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			if p, ok := pathOf(ev.Request.URL); ok {
				mu.Lock()
				sent[p] = true
				mu.Unlock()
			}
		}
	})
	b.watchers.Go(func() {
		for ev, err := range responses {
			if err != nil {
				return
			}
			if p, ok := pathOf(ev.Response.URL); ok {
				mu.Lock()
				answered[p] = ev.Response.Status
				mu.Unlock()
			}
		}
	})
	b.do("visiting the other origin", chromedp.Navigate(evil.URL+"/"))
	// The form's post navigates the tab to the daemon's answer.
	b.waitFor("the forged form's answer", `location.href.endsWith("/v1/budget/pause")`)
	body, err := eval[string](b, `document.body.textContent`)
	if err != nil || !strings.Contains(body, "Origin") {
		t.Errorf("the forged form was answered %q (%v); want the refusal of its Origin", body, err)
	}

	forged := []string{"/v1/fetch", "/v1/guard/reset-all", "/v1/budget/pause"}
	all := waitfor.Until(browserWait, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sent[forged[0]] && sent[forged[1]] && sent[forged[2]] && answered[forged[1]] != 0
	})
	mu.Lock()
	if !all {
		t.Errorf("the browser did not send every forged request: sent %v, answered %v", sent, answered)
	}
	// Only the forged paths: the dashboard's own refreshes, under way
	// when the tab left it, are answered too.
	for _, path := range forged {
		status, ok := answered[path]
		if ok && status != http.StatusUnauthorized && status != http.StatusForbidden {
			t.Errorf("the daemon answered the forged %s with %d; want 401 or 403", path, status)
		}
	}
	t.Logf("forged requests sent %v, answered %v", sent, answered)
	mu.Unlock()

	var rep statusReport
	decodeInto(t, f.do("GET", "/v1/status", nil, bearer...), &rep)
	if rep.Guard.ByState["open"] != 1 {
		t.Errorf("the forged fetch reset the guard: %+v", rep.Guard.ByState)
	}
	if rep.Budget == nil || rep.Budget.Paused {
		t.Error("the forged form paused the budget")
	}
	if n := upstreamHits.Load(); n != 0 {
		t.Errorf("the forged image made the daemon fetch %d times", n)
	}
	// The session itself still works from the daemon's own page.
	b.do("back to the dashboard", chromedp.Navigate(f.api+"/"))
	b.waitFor("the dashboard again", `document.querySelector("#panels") !== null`)
}
