package server

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/waitfor"
)

// parkItem adds id naming host (or none), claims it and fails it with
// class through the API; nothing else may be due. failHost, when set, is
// sent with the failure.
func (f *fixture) parkItem(t *testing.T, id, host, class, failHost string) itemJSON {
	t.Helper()
	item := map[string]any{"id": id}
	if host != "" {
		item["host"] = host
	}
	if a := f.do("POST", "/v1/items", map[string]any{"items": []any{item}}); a.status != http.StatusOK {
		t.Fatalf("add %s: %d %s", id, a.status, a.body)
	}
	ls := f.claim(t, 1, 60)
	if len(ls) != 1 || ls[0].ID != id {
		t.Fatalf("claim for %s: %+v", id, ls)
	}
	body := map[string]any{"lease": ls[0].Lease, "class": class}
	if failHost != "" {
		body["host"] = failHost
	}
	var it itemJSON
	a := f.do("POST", itemPath(id, "fail"), body)
	if a.status != http.StatusOK {
		t.Fatalf("fail %s: %d %s", id, a.status, a.body)
	}
	decodeInto(t, a, &it)
	return it
}

func (f *fixture) item(t *testing.T, id string) itemJSON {
	t.Helper()
	var it itemJSON
	decodeInto(t, f.do("GET", itemPath(id, ""), nil), &it)
	return it
}

// metricValue reads one unlabelled (or fully labelled) sample from
// /metrics; -1 if it is missing.
func (f *fixture) metricValue(t *testing.T, series string) float64 {
	t.Helper()
	text := string(f.do("GET", "/metrics", nil).body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHostTouchWakesParkedItems: a successful touch of a host makes the
// items parked behind it after a host-level failure due within the wake
// jitter, and nothing else; the stats route and the metrics count it.
func TestHostTouchWakesParkedItems(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := f.clock.Now()
	parked := f.parkItem(t, "parked", "Tracker.Example", "timeout", "")
	if parked.Host != "tracker.example" || !parked.NextAt.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("parked item: %+v; want host tracker.example, due in 30 minutes", parked)
	}
	named := f.parkItem(t, "named-by-fail", "", "refused", "tracker.example")
	if named.Host != "tracker.example" {
		t.Fatalf("a failure's host was not kept: %+v", named)
	}
	f.parkItem(t, "item-level", "tracker.example", "no_peers", "")
	f.parkItem(t, "other-host", "other.example", "timeout", "")

	// A failed touch wakes nothing; a successful one of another name
	// neither.
	for _, touch := range []struct {
		name string
		ok   bool
	}{{"tracker.example", false}, {"unrelated.example", true}} {
		if a := f.do("POST", "/v1/hosts/"+touch.name+"/touch", map[string]any{"ok": touch.ok}); a.status != http.StatusOK {
			t.Fatalf("touch: %d %s", a.status, a.body)
		}
	}
	waitfor.True(t, 10*time.Second, "the wakes of the touches ran", func() bool {
		return f.metricValue(t, `hostguard_retry_host_wake_calls_total{result="none"}`) == 1
	})
	if a := f.do("POST", "/v1/hosts/TRACKER.example:6969/touch", map[string]any{"ok": true}); a.status != http.StatusOK {
		t.Fatalf("touch: %d %s", a.status, a.body)
	}
	waitfor.True(t, 10*time.Second, "the touch woke the host's items", func() bool {
		return f.metricValue(t, `hostguard_retry_host_wake_calls_total{result="woke"}`) == 1
	})
	for _, id := range []string{"parked", "named-by-fail"} {
		it := f.item(t, id)
		if it.NextAt.Before(now) || it.NextAt.After(now.Add(time.Minute)) || it.Failures != 1 || it.LastClass == "" {
			t.Errorf("%s after the wake: %+v; want due within the minute's jitter, its failure kept", id, it)
		}
	}
	for _, id := range []string{"item-level", "other-host"} {
		if it := f.item(t, id); !it.NextAt.Equal(now.Add(30 * time.Minute)) {
			t.Errorf("%s was moved to %v", id, it.NextAt)
		}
	}
	stats := f.do("GET", "/v1/items/stats", nil).json(t)
	if stats["host_wakes"] != float64(1) || stats["host_woken"] != float64(2) || stats["host_woken_at"] == nil {
		t.Errorf("stats: host_wakes %v host_woken %v host_woken_at %v; want 1, 2 and a time", stats["host_wakes"], stats["host_woken"], stats["host_woken_at"])
	}
	if sched, _ := stats["schedule"].(map[string]any); sched["wake_jitter"] != "1m0s" {
		t.Errorf("schedule: %v; want wake_jitter 1m0s", sched)
	}
	if got := f.metricValue(t, "hostguard_retry_host_wakes_total"); got != 1 {
		t.Errorf("hostguard_retry_host_wakes_total %v, want 1", got)
	}
	if got := f.metricValue(t, "hostguard_retry_host_woken_items_total"); got != 2 {
		t.Errorf("hostguard_retry_host_woken_items_total %v, want 2", got)
	}
}

// TestGuardAnswerWakesParkedItems: an endpoint whose trial is answered
// wakes its host's items; a reset of an open endpoint (no answer) does
// not.
func TestGuardAnswerWakesParkedItems(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Guard.MaxProbes = -1 })
	f.parkItem(t, "reset-only", "reset.example", "timeout", "")
	f.parkItem(t, "answered", "answer.example", "timeout", "")
	parkedUntil := f.clock.Now().Add(30 * time.Minute)
	trip := func(u string) {
		for range 2 {
			m := f.do("POST", "/v1/guard/acquire", map[string]any{"url": u}).json(t)
			f.do("POST", "/v1/guard/report", map[string]any{"ticket": m["ticket"], "outcome": "failed", "error_class": "timeout"})
		}
	}
	trip("https://reset.example:8443/x")
	trip("https://answer.example/x")
	if a := f.do("POST", "/v1/guard/reset", map[string]any{"url": "https://reset.example:8443"}); a.status != http.StatusNoContent {
		t.Fatalf("reset: %d %s", a.status, a.body)
	}
	f.clock.Advance(30 * time.Second)
	trial := f.do("POST", "/v1/guard/acquire", map[string]any{"url": "https://answer.example/x"}).json(t)
	if trial["trial"] != true {
		t.Fatalf("no trial after the open period: %v", trial)
	}
	f.do("POST", "/v1/guard/report", map[string]any{"ticket": trial["ticket"], "outcome": "answered"})
	now := f.clock.Now()
	waitfor.True(t, 10*time.Second, "the answer woke answer.example's item", func() bool {
		return !f.item(t, "answered").NextAt.Equal(parkedUntil)
	})
	if it := f.item(t, "answered"); it.NextAt.Before(now) || it.NextAt.After(now.Add(time.Minute)) {
		t.Errorf("answered: next at %v; want within a minute of %v", it.NextAt, now)
	}
	if it := f.item(t, "reset-only"); !it.NextAt.Equal(parkedUntil) {
		t.Errorf("a reset without an answer woke reset.example's item: next at %v", it.NextAt)
	}
}

// TestItemHostIsChecked: a bad host is a 400 naming the field, on add, on
// fail and in a settle batch, and changes nothing.
func TestItemHostIsChecked(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.do("POST", "/v1/items", map[string]any{"items": []any{map[string]any{"id": "a"}, map[string]any{"id": "b", "host": "user:secret@example.com"}}})
	expectError(t, a, http.StatusBadRequest, "items[1].host")
	if strings.Contains(string(a.body), "secret") {
		t.Fatalf("the answer repeats the userinfo: %s", a.body)
	}
	if g := f.do("GET", itemPath("a", ""), nil); g.status != http.StatusNotFound {
		t.Fatalf("an add refused for a bad host stored another item: %d", g.status)
	}
	f.do("POST", "/v1/items", map[string]any{"items": []any{map[string]any{"id": "a"}}})
	ls := f.claim(t, 1, 60)
	expectError(t, f.do("POST", itemPath("a", "fail"), map[string]any{"lease": ls[0].Lease, "class": "timeout", "host": "example.com/path"}),
		http.StatusBadRequest, "host")
	if it := f.item(t, "a"); it.State != "leased" || it.Failures != 0 {
		t.Fatalf("a refused failure changed the item: %+v", it)
	}
	var res struct {
		Results []struct {
			OK      bool   `json:"ok"`
			Error   string `json:"error"`
			Message string `json:"message"`
		} `json:"results"`
	}
	decodeInto(t, f.do("POST", "/v1/items/settle", map[string]any{"outcomes": []any{
		map[string]any{"id": "a", "lease": ls[0].Lease, "op": "fail", "class": "timeout", "host": "example.com:80"}}}), &res)
	if len(res.Results) != 1 || res.Results[0].OK || res.Results[0].Error != "invalid" || !strings.Contains(res.Results[0].Message, "host") {
		t.Fatalf("settle with a bad host: %+v", res)
	}
	expectError(t, f.do("POST", "/v1/items/settle", map[string]any{"outcomes": []any{
		map[string]any{"id": "a", "lease": ls[0].Lease, "op": "succeed", "host": "example.com"}}}), http.StatusBadRequest, "outcomes[0].class")
}

// TestWaitingClaimsMetric: a claim waiting for work shows in
// hostguard_retry_waiting_claims until work comes.
func TestWaitingClaimsMetric(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if got := f.metricValue(t, "hostguard_retry_waiting_claims"); got != 0 {
		t.Fatalf("hostguard_retry_waiting_claims %v before any claim, want 0", got)
	}
	done := make(chan answer, 1)
	go func() {
		done <- f.do("POST", "/v1/items/claim", map[string]any{"n": 1, "lease_seconds": 60, "wait_seconds": 30})
	}()
	waitfor.True(t, 10*time.Second, "the metric counts the waiting claim", func() bool {
		return f.metricValue(t, "hostguard_retry_waiting_claims") == 1
	})
	f.do("POST", "/v1/items", map[string]any{"items": []any{map[string]any{"id": "work"}}})
	if a := <-done; a.status != http.StatusOK || !strings.Contains(string(a.body), `"work"`) {
		t.Fatalf("the waiting claim: %d %s", a.status, a.body)
	}
	if got := f.metricValue(t, "hostguard_retry_waiting_claims"); got != 0 {
		t.Fatalf("hostguard_retry_waiting_claims %v after the claim ended, want 0", got)
	}
}

// fakeSharer records what the guard publishes and holds every lease.
type fakeSharer struct {
	published chan guard.Transition
	claims    int
}

func (f *fakeSharer) Publish(t guard.Transition) { f.published <- t }

func (f *fakeSharer) Claim(context.Context, guard.ClaimParams) (guard.Lease, error) {
	f.claims++
	return guard.Lease{Held: true}, nil
}

// TestWatchAnswersKeepsTheSharer: the daemon's watch on the guard's
// answers passes every transition on to a configured Sharer, keeps it a
// Claimer, and wakes a host on an answer only.
func TestWatchAnswersKeepsTheSharer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.parkItem(t, "parked", "x.example", "refused", "")
	parkedUntil := f.item(t, "parked").NextAt
	next := &fakeSharer{published: make(chan guard.Transition, 4)}
	w := f.s.watchAnswers(next)
	c, ok := w.(guard.Claimer)
	if !ok {
		t.Fatal("the watch hides the Sharer's Claimer")
	}
	if l, err := c.Claim(context.Background(), guard.ClaimParams{Endpoint: "https://x.example"}); err != nil || !l.Held || next.claims != 1 {
		t.Fatalf("Claim = %+v, %v after %d claims; want the wrapped lease", l, err, next.claims)
	}
	if _, ok := f.s.watchAnswers(nil).(guard.Claimer); ok {
		t.Fatal("a watch over no Sharer claims leases")
	}
	w.Publish(guard.Transition{Endpoint: "https://x.example:8443", Change: guard.ChangeReset})
	w.Publish(guard.Transition{Endpoint: "https://x.example:8443", Change: guard.ChangeOpened})
	for _, want := range []guard.Change{guard.ChangeReset, guard.ChangeOpened} {
		if got := <-next.published; got.Change != want {
			t.Fatalf("passed on %v, want %v", got.Change, want)
		}
	}
	w.Publish(guard.Transition{Endpoint: "https://x.example:8443", Change: guard.ChangeAnswered})
	if got := <-next.published; got.Change != guard.ChangeAnswered {
		t.Fatalf("passed on %v, want answered", got.Change)
	}
	waitfor.True(t, 10*time.Second, "the answer woke x.example's item", func() bool {
		return !f.item(t, "parked").NextAt.Equal(parkedUntil)
	})
	if got := f.metricValue(t, `hostguard_retry_host_wake_calls_total{result="woke"}`); got != 1 {
		t.Fatalf("wakes that moved items: %v; want 1 (the answer, not the reset or the opening)", got)
	}
}
