package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/feed"
)

func feedStore(t testing.TB, h *Harness) feed.Store {
	t.Helper()
	st, ok := h.Open(t).(feed.Store)
	if !ok {
		t.Fatalf("%s store does not implement feed.Store", h.Engine)
	}
	return st
}

var feedT0 = time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)

func testFeed(t *testing.T, newHarness NewFunc) {
	t.Run("first commit creates the cursor", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		st := feedStore(t, h)
		if _, ok, err := st.FeedCursor(ctx(t), "idx"); ok || err != nil {
			t.Fatalf("cursor of a new feed: ok=%v err=%v", ok, err)
		}
		res, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{
			Name: "idx", State: []byte(`{"v":1}`), IDs: []string{"c", "a", "b"}, Now: feedT0,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Version < 1 || fmt.Sprint(res.New) != "[c a b]" {
			t.Fatalf("commit = %+v; want a version and every id new, in order", res)
		}
		c, ok, err := feedStore(t, h).FeedCursor(ctx(t), "idx")
		if err != nil || !ok {
			t.Fatalf("cursor from another handle: ok=%v err=%v", ok, err)
		}
		if c.Version != res.Version || string(c.State) != `{"v":1}` || c.Seen != 3 || c.Items != 3 || !c.UpdatedAt.Equal(feedT0) {
			t.Fatalf("cursor = %+v", c)
		}
	})

	t.Run("stale version conflicts and changes nothing", func(t *testing.T) {
		t.Parallel()
		st := feedStore(t, newHarness(t))
		first, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{Name: "f", State: []byte("one"), IDs: []string{"a"}, Now: feedT0})
		if err != nil {
			t.Fatal(err)
		}
		for _, expect := range []int64{0, first.Version + 1} {
			_, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{
				Name: "f", ExpectVersion: expect, State: []byte("two"), IDs: []string{"b"}, Now: feedT0.Add(time.Second),
			})
			if !errors.Is(err, feed.ErrConflict) {
				t.Fatalf("commit expecting version %d: %v; want ErrConflict", expect, err)
			}
		}
		if _, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{Name: "gone", ExpectVersion: 3, Now: feedT0}); !errors.Is(err, feed.ErrConflict) {
			t.Fatalf("commit expecting a version of a missing cursor: %v; want ErrConflict", err)
		}
		c, _, err := st.FeedCursor(ctx(t), "f")
		if err != nil || c.Version != first.Version || string(c.State) != "one" || c.Seen != 1 || c.Items != 1 {
			t.Fatalf("after conflicts cursor = %+v, %v; want it unchanged", c, err)
		}
		res, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{Name: "f", ExpectVersion: first.Version, IDs: []string{"b"}, Now: feedT0})
		if err != nil || fmt.Sprint(res.New) != "[b]" {
			t.Fatalf("b was recorded by a conflicting commit: %+v, %v", res, err)
		}
		if _, ok, _ := st.FeedCursor(ctx(t), "gone"); ok {
			t.Fatal("a conflicting commit created a cursor")
		}
	})

	t.Run("known ids are not new and nil state keeps the state", func(t *testing.T) {
		t.Parallel()
		st := feedStore(t, newHarness(t))
		r1, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{Name: "f", State: []byte("s1"), IDs: []string{"a", "b"}, Now: feedT0})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{Name: "f", ExpectVersion: r1.Version, IDs: []string{"z", "b", "y", "a"}, Now: feedT0})
		if err != nil || fmt.Sprint(r2.New) != "[z y]" || r2.Version <= r1.Version {
			t.Fatalf("second commit = %+v, %v; want [z y] new and a higher version", r2, err)
		}
		c, _, _ := st.FeedCursor(ctx(t), "f")
		if string(c.State) != "s1" || c.Seen != 4 || c.Items != 4 {
			t.Fatalf("cursor = %+v; want state kept, 4 seen, 4 items", c)
		}
	})

	t.Run("seen ids are capped per feed, oldest first", func(t *testing.T) {
		t.Parallel()
		st := feedStore(t, newHarness(t))
		v := int64(0)
		commit := func(name string, at time.Time, ids ...string) []string {
			t.Helper()
			c, _, err := st.FeedCursor(ctx(t), name)
			if err != nil {
				t.Fatal(err)
			}
			r, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{Name: name, ExpectVersion: c.Version, IDs: ids, Now: at, SeenCap: 5})
			if err != nil {
				t.Fatal(err)
			}
			v = r.Version
			return r.New
		}
		commit("f", feedT0, "a1", "a2", "a3")
		commit("other", feedT0, "o1", "o2", "o3", "o4") // another feed's ids do not count
		commit("f", feedT0.Add(time.Second), "b1", "b2", "b3", "b4")
		c, _, _ := st.FeedCursor(ctx(t), "f")
		if c.Seen != 5 || c.Items != 7 || c.Version != v {
			t.Fatalf("cursor = %+v; want 5 remembered of 7 handed out", c)
		}
		if r, _ := st.FeedCommit(ctx(t), feed.StoreCommitParams{Name: "f", ExpectVersion: c.Version, Now: feedT0.Add(time.Second), SeenCap: 5}); r.Forgotten != 0 {
			t.Fatalf("a commit under the cap forgot %d", r.Forgotten)
		}
		// a1 and a2 (the oldest) were forgotten; a3 and the b's were not.
		if got := commit("f", feedT0.Add(2*time.Second), "a1", "a2", "a3", "b1"); fmt.Sprint(got) != "[a1 a2]" {
			t.Fatalf("re-offered ids new = %v; want the two forgotten ones", got)
		}
		if got := commit("other", feedT0.Add(2*time.Second), "o1"); len(got) != 0 {
			t.Fatalf("other feed lost ids: %v", got)
		}
	})

	t.Run("seen ids age out besides the cap, and both report what they dropped", func(t *testing.T) {
		t.Parallel()
		st := feedStore(t, newHarness(t))
		day := 24 * time.Hour
		commit := func(at time.Time, p feed.StoreCommitParams, ids ...string) feed.StoreCommitResult {
			t.Helper()
			c, _, err := st.FeedCursor(ctx(t), "f")
			if err != nil {
				t.Fatal(err)
			}
			p.Name, p.ExpectVersion, p.IDs, p.Now = "f", c.Version, ids, at
			r, err := st.FeedCommit(ctx(t), p)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		commit(feedT0, feed.StoreCommitParams{}, "old1", "old2", "old3")
		commit(feedT0.Add(10*day), feed.StoreCommitParams{}, "mid1", "mid2")
		// 31 days on, forgetting what is older than 30 days: old1 is
		// offered again, so it is not new now, but it goes with the others.
		r := commit(feedT0.Add(31*day), feed.StoreCommitParams{ForgetBefore: feedT0.Add(day)}, "old1", "new1")
		if fmt.Sprint(r.New) != "[new1]" || r.Forgotten != 3 {
			t.Fatalf("commit = %+v; want new1 new and the three old ids forgotten", r)
		}
		c, _, _ := st.FeedCursor(ctx(t), "f")
		if c.Seen != 3 || c.Items != 6 {
			t.Fatalf("cursor = %+v; want mid1, mid2, new1 remembered of 6 handed out", c)
		}
		if r := commit(feedT0.Add(32*day), feed.StoreCommitParams{}, "old2", "mid1"); fmt.Sprint(r.New) != "[old2]" || r.Forgotten != 0 {
			t.Fatalf("re-offered = %+v; want only the forgotten old2 new", r)
		}
		// The cap reports what it drops too: mid1 and mid2 are the oldest.
		if r := commit(feedT0.Add(33*day), feed.StoreCommitParams{SeenCap: 3, ForgetBefore: feedT0}, "new2"); r.Forgotten != 2 {
			t.Fatalf("capped commit = %+v; want 2 forgotten", r)
		}
		if c, _, _ := st.FeedCursor(ctx(t), "f"); c.Seen != 3 {
			t.Fatalf("cursor = %+v; want 3 remembered", c)
		}
	})

	t.Run("cursors list and reset", func(t *testing.T) {
		t.Parallel()
		st := feedStore(t, newHarness(t))
		for _, n := range []string{"b", "a", "c"} {
			if _, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{Name: n, State: []byte(n), IDs: []string{"x"}, Now: feedT0}); err != nil {
				t.Fatal(err)
			}
		}
		cs, err := st.FeedCursors(ctx(t))
		if err != nil || len(cs) != 3 || cs[0].Name != "a" || cs[2].Name != "c" || string(cs[1].State) != "b" {
			t.Fatalf("cursors = %+v, %v", cs, err)
		}
		if ok, err := st.FeedReset(ctx(t), "b"); !ok || err != nil {
			t.Fatalf("reset = %v, %v", ok, err)
		}
		if ok, err := st.FeedReset(ctx(t), "b"); ok || err != nil {
			t.Fatalf("second reset = %v, %v; want false", ok, err)
		}
		r, err := st.FeedCommit(ctx(t), feed.StoreCommitParams{Name: "b", IDs: []string{"x"}, Now: feedT0})
		if err != nil || fmt.Sprint(r.New) != "[x]" {
			t.Fatalf("after reset x = %+v, %v; want new again", r, err)
		}
		c, _, _ := st.FeedCursor(ctx(t), "b")
		if len(c.State) != 0 || c.Items != 1 {
			t.Fatalf("cursor after reset = %+v; want empty state, 1 item", c)
		}
	})

	t.Run("concurrent commits from several handles never lose an update", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		stores := []feed.Store{feedStore(t, h), feedStore(t, h), feedStore(t, h)}
		const workers, each = 6, 10
		var wg sync.WaitGroup
		var mu sync.Mutex
		conflicts := 0
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := stores[w%len(stores)]
				for i := 0; i < each; {
					c, _, err := st.FeedCursor(ctx(t), "shared")
					if err != nil {
						errs <- err
						return
					}
					n, _ := strconv.Atoi(string(c.State))
					_, err = st.FeedCommit(ctx(t), feed.StoreCommitParams{
						Name: "shared", ExpectVersion: c.Version, State: []byte(strconv.Itoa(n + 1)),
						IDs: []string{fmt.Sprintf("w%d-%d", w, i), "common"}, Now: feedT0,
					})
					if errors.Is(err, feed.ErrConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					i++
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		c, _, err := stores[0].FeedCursor(ctx(t), "shared")
		if err != nil {
			t.Fatal(err)
		}
		const total = workers * each
		if string(c.State) != strconv.Itoa(total) || c.Version != total || c.Items != total+1 {
			t.Fatalf("cursor = state %s version %d items %d; want %d, %d, %d (conflicts: %d)",
				c.State, c.Version, c.Items, total, total, total+1, conflicts)
		}
	})
}

// The legacy feed data: what a store held for feed "legacy" before item
// ids were hashed (schema version 29 and earlier): ids in clear in the
// handed-out record (some carrying an API key, as Torznab proxies' guids
// do) and a cursor of format 1. Engine tests write them with SQL into a
// store rolled back to before migration 30, reopen it, and call
// CheckLegacyFeedMigrated.
var (
	LegacyFeedIDs = []string{
		"https://x.example/details/a?apikey=LEGACYSECRET", "https://x.example/details/mid?apikey=LEGACYSECRET",
		"https://x.example/details/b?apikey=LEGACYSECRET", "plain-guid",
	}
	LegacyFeedState = `{"v":1,"head":{"id":"https://x.example/details/a?apikey=LEGACYSECRET","published":"2026-03-01T10:04:00Z"},` +
		`"gaps":[{"after":{"id":"https://x.example/details/b?apikey=LEGACYSECRET","published":"2026-03-01T10:02:00Z"},"span":2,` +
		`"before":{"id":"plain-guid","published":"2026-03-01T10:00:00Z"}}],"synced_at":"2026-03-01T10:05:00Z"}`
)

// LegacyFeedSecret is the key in the legacy ids; no stored byte may hold
// it after the migration.
const LegacyFeedSecret = "LEGACYSECRET"

// CheckLegacyFeedMigrated checks that a store migrated from the legacy
// feed data keeps working: the cursor's position and the handed-out ids
// survive, hashed. dump returns every text the store holds for feeds (ids
// and cursor states), to check that no id is left in clear.
func CheckLegacyFeedMigrated(t *testing.T, st hostguard.Store, dump func() []string) {
	t.Helper()
	for _, s := range dump() {
		if strings.Contains(s, LegacyFeedSecret) || strings.Contains(s, "plain-guid") {
			t.Fatalf("an id is still stored in clear: %q", s)
		}
	}
	for _, s := range dump() {
		var doc struct {
			V *int `json:"v"`
		}
		if json.Unmarshal([]byte(s), &doc) == nil && doc.V != nil && *doc.V != 2 {
			t.Fatalf("a cursor state is still of format %d: %s", *doc.V, s)
		}
	}
	s, err := feed.NewSyncer(st, feed.Config{Now: func() time.Time { return feedT0 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Statuses(ctx(t)); err != nil {
		t.Fatalf("migrated cursors: %v", err)
	}
	status, err := s.Status(ctx(t), "legacy")
	if err != nil || !status.Synced || status.Head.ID != feed.IDHash(LegacyFeedIDs[0]) || status.Gaps != 1 || status.Remembered != 4 {
		t.Fatalf("migrated status = %+v, %v", status, err)
	}
	// The feed as it is now: one new release above the old head, and c,
	// which the stored gap (between b and plain-guid) has not read yet.
	at := func(m int) time.Time { return time.Date(2026, 3, 1, 10, m, 0, 0, time.UTC) }
	page := []feed.Item{
		{ID: "https://x.example/details/new?apikey=LEGACYSECRET", Published: at(5)},
		{ID: LegacyFeedIDs[0], Published: at(4)},
		{ID: LegacyFeedIDs[1], Published: at(3)},
		{ID: LegacyFeedIDs[2], Published: at(2)},
		{ID: "https://x.example/details/c?apikey=LEGACYSECRET", Published: at(1)},
		{ID: LegacyFeedIDs[3], Published: at(0)},
	}
	src := feed.SourceFunc(func(_ context.Context, offset int) ([]feed.Item, error) {
		return page[min(offset, len(page)):], nil
	})
	res, err := s.Sync(ctx(t), "legacy", src)
	if err != nil || res.Stop != feed.StopCaughtUp || res.Gaps != 0 {
		t.Fatalf("sync of the migrated feed: %+v, %v", res, err)
	}
	var got []string
	for _, it := range res.Items {
		got = append(got, it.ID)
	}
	if want := []string{page[0].ID, page[4].ID}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("handed out %q; want %q (the rest was handed out before the migration)", got, want)
	}
	for _, s := range dump() {
		if strings.Contains(s, LegacyFeedSecret) {
			t.Fatalf("a sync stored an id in clear: %q", s)
		}
	}
}
