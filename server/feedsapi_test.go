package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/internal/fakeindexer"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/sqlitetest"
	"github.com/hostguard/hostguard/internal/waitfor"
)

const testAPIKey = "k3y-0f-the-acc0unt"

// newFakeIndexer starts a Newznab indexer on 127.0.0.1 that takes key and
// lists releases, published a minute apart, which it returns oldest first.
// Like real indexers it writes the key into download links, and (like some
// Torznab proxies) into guids.
func newFakeIndexer(t *testing.T, key string, releases int) (*fakeindexer.Indexer, []fakeindexer.Release) {
	t.Helper()
	x := fakeindexer.New(fakeindexer.Options{APIKey: key, KeyInGUID: true})
	t.Cleanup(x.Close)
	return x, x.PublishEvery(releases, time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC), time.Minute)
}

// withFeed configures one feed on x, keeping its 3 newest items.
func withFeed(x *fakeindexer.Indexer) func(*Config) {
	return func(c *Config) {
		c.Feeds = []Feed{{Name: "fake", URL: x.URL(), APIKey: testAPIKey, KeepItems: 3}}
	}
}

// feedNamed reads GET /v1/feeds and returns the named feed.
func (f *fixture) feedNamed(name string) (api.FeedList, feedView, bool) {
	f.t.Helper()
	var resp api.FeedList
	decodeInto(f.t, f.do("GET", "/v1/feeds", nil), &resp)
	for _, v := range resp.Feeds {
		if v.Name == name {
			return resp, v, true
		}
	}
	return resp, feedView{}, false
}

// waitSynced waits until the leader's first sync of feed name shows.
func (f *fixture) waitSynced(name string) feedView {
	f.t.Helper()
	var v feedView
	waitfor.True(f.t, 10*time.Second, "the feed was never synced", func() bool {
		_, v, _ = f.feedNamed(name)
		return v.Synced && v.LastSync != nil
	})
	return v
}

func TestConfiguredFeedIsPolledByTheLeader(t *testing.T) {
	t.Parallel()
	x, rels := newFakeIndexer(t, testAPIKey, 5)
	f := setup(t, withFeed(x))

	v := f.waitSynced("fake")
	if !v.Configured || !v.Leading || v.LastItems != 5 || v.ItemsTotal != 5 || v.ItemsSeen != 5 || v.LastPages != 1 ||
		v.LastStop != "caught-up" || v.LastError != "" || v.Gaps != 0 {
		t.Fatalf("feed after its first sync: %+v", v)
	}
	// The head's id is stored hashed: its guid carries the key.
	headID := strings.TrimSuffix(x.URL(), "/api") + "/details/" + rels[4].GUID + "?apikey=[key]"
	if v.URL != x.URL() || v.Head == nil || v.Head.ID != feed.IDHash(headID) {
		t.Fatalf("feed url %q, head %+v", v.URL, v.Head)
	}
	// A fresh source allows 100 head polls a day: every 30 minutes fits.
	if v.IntervalSeconds != 1800 || v.NextHeadPoll == nil || !v.NextHeadPoll.Equal(f.clock.Now().Add(30*time.Minute)) {
		t.Fatalf("interval %v, next poll %v", v.IntervalSeconds, v.NextHeadPoll)
	}
	if n := x.Count("search"); n != 1 {
		t.Fatalf("the indexer got %d searches; one head page holds every release", n)
	}

	// The items: the newest three, newest first, without the download
	// link.
	var items api.FeedItems
	decodeInto(t, f.do("GET", "/v1/feeds/fake/items", nil), &items)
	if len(items.Items) != 3 || items.Items[0].Title != rels[4].Title || items.Items[2].Title != rels[2].Title ||
		items.Items[0].Size != rels[4].Size || items.Items[0].Attrs["category"] != "5000,5040" {
		t.Fatalf("items: %+v", items)
	}
	if _, ok := items.Items[0].Attrs["link"]; ok {
		t.Fatal("an item carries its download link")
	}
	decodeInto(t, f.do("GET", "/v1/feeds/fake/items?limit=1", nil), &items)
	if len(items.Items) != 1 {
		t.Fatalf("limit=1 gave %d items", len(items.Items))
	}

	// The head poll and the caps request before it were charged to the
	// feed's budget source, which the server created for it.
	var rep struct {
		Sources []struct {
			Name string `json:"name"`
			Used int64  `json:"used"`
		} `json:"sources"`
	}
	decodeInto(t, f.do("GET", "/v1/budget", nil), &rep)
	used := -1
	for _, s := range rep.Sources {
		if s.Name == "fake" {
			used = int(s.Used)
		}
	}
	if used != 2 {
		t.Fatalf("the feed's source used %d, want 2 (caps and the head poll)", used)
	}

	// The key is in guids and links, but nowhere the daemon shows or logs.
	for _, p := range []string{"/v1/feeds", "/v1/feeds/fake/items", "/v1/status", "/", "/metrics", "/v1/budget"} {
		if a := f.do("GET", p, nil); strings.Contains(string(a.body), testAPIKey) {
			t.Errorf("GET %s shows the API key", p)
		}
	}
	if strings.Contains(f.logs.String(), testAPIKey) {
		t.Error("the API key was logged")
	}
	m := string(f.do("GET", "/metrics", nil).body)
	for _, want := range []string{`hostguard_feed_items_seen_total{feed="fake"} 5`, "hostguard_leader_leading 1", "hostguard_leader_term 1"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if rep := f.dashboardReport(); len(rep.Feeds) != 1 || rep.Feeds[0].Name != "fake" || !rep.Leader.Leading {
		t.Error("the status page lacks the feed or the leader")
	}

	// A configured feed's budget source cannot be removed from under it.
	expectError(t, f.do("DELETE", "/v1/budget/sources/fake", nil), http.StatusConflict, "name")

	// Reset forgets the position and the kept items.
	var reset api.FeedReset
	decodeInto(t, f.do("POST", "/v1/feeds/fake/reset", nil), &reset)
	if !reset.HadPosition || reset.Name != "fake" {
		t.Fatalf("reset: %+v", reset)
	}
	if _, v, _ := f.feedNamed("fake"); v.Synced || v.Head != nil || v.ItemsTotal != 0 {
		t.Fatalf("after reset: %+v", v)
	}
	decodeInto(t, f.do("GET", "/v1/feeds/fake/items", nil), &items)
	if len(items.Items) != 0 {
		t.Fatalf("items after reset: %d", len(items.Items))
	}
}

func TestFeedRoutesBadInput(t *testing.T) {
	t.Parallel()
	x, _ := newFakeIndexer(t, testAPIKey, 2)
	f := setup(t, withFeed(x))
	f.waitSynced("fake")
	long := strings.Repeat("n", feed.MaxNameLen+1)
	cases := []struct {
		name, method, path string
		status             int
		field              string
	}{
		{"reset unknown", "POST", "/v1/feeds/nowhere/reset", 404, "name"},
		{"reset too long", "POST", "/v1/feeds/" + long + "/reset", 400, "name"},
		{"items unknown", "GET", "/v1/feeds/nowhere/items", 404, "name"},
		{"items limit 0", "GET", "/v1/feeds/fake/items?limit=0", 400, "limit"},
		{"items limit beyond kept", "GET", "/v1/feeds/fake/items?limit=4", 400, "limit"},
		{"items limit not a number", "GET", "/v1/feeds/fake/items?limit=all", 400, "limit"},
		{"feeds wrong method", "DELETE", "/v1/feeds", 405, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, f.do(c.method, c.path, nil), c.status, c.field)
		})
	}
	// Nothing was reset.
	if _, v, _ := f.feedNamed("fake"); !v.Synced || v.ItemsTotal != 2 {
		t.Fatalf("bad requests changed the feed: %+v", v)
	}
}

func TestFeedConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		feed Feed
		want string
	}{
		{"no name", Feed{URL: "http://127.0.0.1:1/api"}, "feeds[0].name: is empty"},
		{"no url", Feed{Name: "a"}, "feeds[0].url: is empty"},
		{"ftp", Feed{Name: "a", URL: "ftp://127.0.0.1/api"}, "feeds[0].url: is not an http"},
		{"key in url", Feed{Name: "a", URL: "http://127.0.0.1:1/api?apikey=" + testAPIKey}, "apikey parameter"},
		{"userinfo", Feed{Name: "a", URL: "http://u:" + testAPIKey + "@127.0.0.1:1/api"}, "user:password"},
		{"negative pages", Feed{Name: "a", URL: "http://127.0.0.1:1/api", MaxPages: -1}, "feeds[0].max_pages"},
		{"too many kept", Feed{Name: "a", URL: "http://127.0.0.1:1/api", KeepItems: MaxKeepItems + 1}, "feeds[0].keep_items"},
		{"bad source name", Feed{Name: " a", URL: "http://127.0.0.1:1/api"}, "feeds[0].name"},
	}
	st := sqlitetest.Open(t)
	newTestBudget := func(t *testing.T) *budget.Budget {
		b, err := budget.New(st, budget.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(Config{Feeds: []Feed{c.feed}, FeedStore: st, Budget: newTestBudget(t), Logger: discardLogger()})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
			if strings.Contains(err.Error(), testAPIKey) {
				t.Fatalf("the error shows the key: %v", err)
			}
		})
	}
	_, err := New(Config{Feeds: []Feed{{Name: "a", URL: "http://127.0.0.1:1/api"}}, Budget: newTestBudget(t), Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), "FeedStore") {
		t.Fatalf("feeds without a store: %v", err)
	}
	_, err = New(Config{Feeds: []Feed{{Name: "a", URL: "http://127.0.0.1:1/api"}, {Name: "a", URL: "http://127.0.0.1:2/api"}},
		FeedStore: st, Budget: newTestBudget(t), Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), "feeds[1].name") {
		t.Fatalf("a name used twice: %v", err)
	}
}

// TestFailingFeedNeverShowsTheKey: a dead indexer's error travels to the
// log and to last_error, and an HTTP error names the URL, which carries
// the key in its query.
func TestFailingFeedNeverShowsTheKey(t *testing.T) {
	t.Parallel()
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	x, _ := newFakeIndexer(t, "another-key", 3) // refuses testAPIKey with an error document
	f := setup(t, func(c *Config) {
		c.Feeds = []Feed{
			{Name: "dead", URL: dead.URL() + "/api", APIKey: testAPIKey},
			{Name: "refused", URL: x.URL(), APIKey: testAPIKey},
		}
	})
	for _, name := range []string{"dead", "refused"} {
		var v feedView
		waitfor.True(t, 10*time.Second, name+" never failed", func() bool {
			_, v, _ = f.feedNamed(name)
			return v.LastError != ""
		})
		if v.Synced || v.LastStop != "failed" {
			t.Fatalf("%s: %+v", name, v)
		}
	}
	for _, p := range []string{"/v1/feeds", "/v1/status", "/", "/metrics"} {
		if a := f.do("GET", p, nil); strings.Contains(string(a.body), testAPIKey) {
			t.Errorf("GET %s shows the API key", p)
		}
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "feed: sync failed") {
		t.Fatalf("no failure was logged:\n%s", logs)
	}
	if strings.Contains(logs, testAPIKey) {
		t.Fatalf("the API key was logged:\n%s", logs)
	}
}

// TestStoredFeedNoLongerConfigured: a position left by a feed since taken
// out of the configuration is listed, without its head's id (which may
// hold the old key), and can be reset.
func TestStoredFeedNoLongerConfigured(t *testing.T) {
	t.Parallel()
	f := setup(t)
	syncer, err := feed.NewSyncer(f.store, feed.Config{Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	src := feed.SourceFunc(func(_ context.Context, offset int) ([]feed.Item, error) {
		if offset > 0 {
			return nil, nil
		}
		return []feed.Item{{ID: "https://old.example/dl?apikey=" + testAPIKey, Published: f.clock.Now()}}, nil
	})
	if _, err := syncer.Sync(context.Background(), "old", src); err != nil {
		t.Fatal(err)
	}
	_, v, ok := f.feedNamed("old")
	if !ok || v.Configured || !v.Synced || v.ItemsTotal != 1 || v.Head == nil || v.Head.ID != "" || v.LastSync != nil {
		t.Fatalf("stored feed: %v %+v", ok, v)
	}
	if a := f.do("GET", "/v1/feeds", nil); strings.Contains(string(a.body), testAPIKey) {
		t.Fatal("an unconfigured feed's head id shows its key")
	}
	expectError(t, f.do("GET", "/v1/feeds/old/items", nil), http.StatusNotFound, "name")
	var reset api.FeedReset
	decodeInto(t, f.do("POST", "/v1/feeds/old/reset", nil), &reset)
	if !reset.HadPosition {
		t.Fatalf("reset: %+v", reset)
	}
	expectError(t, f.do("POST", "/v1/feeds/old/reset", nil), http.StatusNotFound, "name")
	if _, _, ok := f.feedNamed("old"); ok {
		t.Fatal("the reset feed is still listed")
	}
}

// TestFeedSkipsAndTemporaryRefusals runs three feeds through the daemon's
// loop: one whose indexer sends an item without any identity, one behind
// a proxy that has disabled it for half an hour, one whose daily limit is
// reached. GET /v1/feeds shows the skipped item and the refusal's time,
// the log says once what was skipped, and the budget closes each source
// until its time: half an hour, or the end of the day.
func TestFeedSkipsAndTemporaryRefusals(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	skips, _ := newFakeIndexer(t, testAPIKey, 2)
	skips.PublishUnidentified(1, at)
	refused, _ := newFakeIndexer(t, testAPIKey, 2)
	refused.Fail(fakeindexer.Fault{Offset: -1, Status: http.StatusTooManyRequests, Code: 429, RetryAfter: "1800",
		Description: "Indexer is disabled till 3/1/2026 12:30:00 PM due to recent failures."})
	daily, _ := newFakeIndexer(t, testAPIKey, 2)
	daily.Fail(fakeindexer.Fault{Offset: -1, Code: 500, Description: "Request limit reached"})
	f := setup(t, func(c *Config) {
		c.Feeds = []Feed{
			{Name: "skips", URL: skips.URL(), APIKey: testAPIKey},
			{Name: "refused", URL: refused.URL(), APIKey: testAPIKey},
			{Name: "daily", URL: daily.URL(), APIKey: testAPIKey},
		}
	})
	now := f.clock.Now()
	for _, name := range []string{"skips", "refused", "daily"} {
		waitfor.True(t, 10*time.Second, name+" never synced", func() bool {
			_, v, _ := f.feedNamed(name)
			return v.LastSync != nil
		})
	}

	_, v, _ := f.feedNamed("skips")
	if v.LastSkipped != 1 || v.Skipped != 1 || v.LastItems != 2 || v.LastStop != "caught-up" {
		t.Fatalf("skips: %+v", v)
	}
	if n := strings.Count(f.logs.String(), "feed: items skipped"); n != 1 || !strings.Contains(f.logs.String(), "no guid, link or enclosure URL: 1") {
		t.Fatalf("the skipped item was logged %d times:\n%s", n, f.logs.String())
	}

	_, v, _ = f.feedNamed("refused")
	half := now.Add(30 * time.Minute)
	if v.LastStop != "not-admitted" || !strings.Contains(v.LastError, "disabled till") || v.RetryAt == nil || !v.RetryAt.Equal(half) ||
		v.NextHeadPoll == nil || v.NextHeadPoll.Before(half) {
		t.Fatalf("refused: %+v", v)
	}
	_, v, _ = f.feedNamed("daily")
	if v.LastStop != "not-admitted" || !strings.Contains(v.LastError, "limit") || v.RetryAt != nil {
		t.Fatalf("daily: %+v", v)
	}

	var rep struct {
		Sources []struct {
			Name           string     `json:"name"`
			Exhausted      bool       `json:"exhausted"`
			ExhaustedUntil *time.Time `json:"exhausted_until"`
		} `json:"sources"`
	}
	decodeInto(t, f.do("GET", "/v1/budget", nil), &rep)
	until := map[string]time.Time{}
	for _, s := range rep.Sources {
		if s.ExhaustedUntil != nil {
			until[s.Name] = *s.ExhaustedUntil
		}
	}
	midnight := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if !until["refused"].Equal(half) || !until["daily"].Equal(midnight) || !until["skips"].IsZero() {
		t.Fatalf("budget closes the sources until %v; want refused until %v, daily until %v", until, half, midnight)
	}
}

// TestSetFeeds replaces the feeds of a running server: an unchanged feed
// keeps its runner (and loop), a bad list changes nothing, a removed feed
// stops and shows as not configured with its stored state.
func TestSetFeeds(t *testing.T) {
	t.Parallel()
	x, _ := newFakeIndexer(t, testAPIKey, 4)
	y, _ := newFakeIndexer(t, testAPIKey, 2)
	f := setup(t, withFeed(x))
	f.waitSynced("fake")
	kept := f.s.feedByName("fake")

	other := Feed{Name: "other", URL: y.URL(), APIKey: testAPIKey}
	if _, _, _, err := f.s.SetFeeds([]Feed{f.s.cfg.Feeds[0], other, other}); err == nil || !strings.Contains(err.Error(), "feeds[2].name") {
		t.Fatalf("a duplicate name: %v", err)
	}
	if got := f.s.feedRunners(); len(got) != 1 || got[0] != kept {
		t.Fatalf("a refused list changed the feeds: %d runners", len(got))
	}

	added, removed, changed, err := f.s.SetFeeds([]Feed{f.s.cfg.Feeds[0], other})
	if err != nil || fmt.Sprint(added, removed, changed) != "[other] [] []" {
		t.Fatalf("adding: %v %v %v %v", added, removed, changed, err)
	}
	if f.s.feedByName("fake") != kept {
		t.Fatal("an unchanged feed was rebuilt")
	}
	f.waitSynced("other")

	added, removed, changed, err = f.s.SetFeeds([]Feed{other})
	if err != nil || fmt.Sprint(added, removed, changed) != "[] [fake] []" {
		t.Fatalf("removing: %v %v %v %v", added, removed, changed, err)
	}
	kept.loop.Status() // still readable after its loop stopped
	_, v, ok := f.feedNamed("fake")
	if !ok || v.Configured || !v.Synced {
		t.Fatalf("the removed feed as listed: %+v (found %v)", v, ok)
	}
}
