package feed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/internal/sqlitetest"
)

// TestRandomHistories drives a feed through random bursts (with stretches
// of items the source cannot identify), take-downs, failing pages,
// refusals and page limits, then lets it settle, and checks that every
// item still listed came out exactly once.
func TestRandomHistories(t *testing.T) {
	t.Parallel()
	seeds := 4
	debug := os.Getenv("FEED_RANDOM_DEBUG") != ""
	if n, err := strconv.Atoi(os.Getenv("FEED_RANDOM_SEEDS")); err == nil && n > 0 {
		seeds = n // a longer hunt: FEED_RANDOM_SEEDS=200 go test -run TestRandomHistories ./feed/
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 42))
			st := sqlitetest.Open(t)
			src := newList(5 + rng.IntN(60))
			src.coarse = seed%2 == 1
			refuse := false
			admit := feed.AdmitterFunc(func(_ context.Context, _ string, _ bool) error {
				if refuse {
					return feed.ErrNotAdmitted
				}
				return nil
			})
			syncers := make([]*feed.Syncer, 5)
			for i := range syncers {
				syncers[i] = newSyncer(t, st, feed.Config{MaxPages: i + 1, MaxGaps: 1000, Admitter: admit})
			}
			got := newTally(t)
			// The first sync fixes the start: older items are never fetched.
			initial := map[string]bool{}
			for _, id := range src.publish(1 + rng.IntN(100)) {
				initial[id] = true
			}
			if res, err := syncers[0].Sync(ctx(t), "f", src); err != nil || !res.First {
				t.Fatalf("first sync: %+v, %v", res, err)
			} else {
				got.add(res.Items)
			}
			for round := 0; round < 60; round++ {
				switch r := rng.IntN(10); {
				case r < 4:
					src.publish(rng.IntN(250))
				case r < 5:
					src.publish(rng.IntN(5))
				case r < 6:
					// Items the source cannot identify, up to several pages.
					src.publishUnidentified(rng.IntN(3 * src.pageSize))
				}
				if rng.IntN(4) == 0 && len(src.items) > 0 {
					if id := src.items[rng.IntN(len(src.items))].ID; id != "" {
						src.remove(id)
					}
				}
				if rng.IntN(6) == 0 {
					src.failRequest(src.requests()+1+rng.IntN(3), errPageDown)
				}
				refuse = rng.IntN(8) == 0
				if rng.IntN(3) == 0 {
					src.onPage = func(int) { src.publish(rng.IntN(4)) }
				} else {
					src.onPage = nil
				}
				s := syncers[rng.IntN(len(syncers))]
				var res feed.Result
				var err error
				if rng.IntN(4) == 0 {
					res, err = s.Resume(ctx(t), "f", src)
				} else {
					res, err = s.Sync(ctx(t), "f", src)
				}
				if err != nil && !errors.Is(err, errPageDown) {
					t.Fatalf("round %d: %v", round, err)
				}
				got.add(res.Items)
				if debug {
					c, _, _ := st.FeedCursor(ctx(t), "f")
					n := len(src.offsets)
					pos := map[string]int{}
					for i, it := range src.items {
						pos[it.ID] = len(src.items) - 1 - i
					}
					t.Logf("round %d: %v stop %s pages %d offsets %v items %d len %d\n  %s\n  pos i00021=%d i00043=%d i00051=%d", round, err, res.Stop, res.Pages, src.offsets[n-res.Pages:], len(res.Items), len(src.items), c.State, pos["i00021"], pos["i00043"], pos["i00051"])
				}
			}
			src.onPage, refuse = nil, false
			src.failAt = map[int]error{}
			settle := newSyncer(t, st, feed.Config{MaxPages: 100, MaxGaps: 1000})
			var last feed.Result
			for i := 0; ; i++ {
				if i == 40 {
					c, _, _ := st.FeedCursor(ctx(t), "f")
					t.Fatalf("did not settle in 40 syncs; last %+v, cursor %s", last, c.State)
				}
				res, err := settle.Sync(ctx(t), "f", src)
				if err != nil {
					t.Fatal(err)
				}
				last = res
				last.Items = nil
				got.add(res.Items)
				if res.Stop == feed.StopCaughtUp && res.Gaps == 0 {
					break
				}
			}
			var listed []string
			for _, it := range src.items {
				if !initial[it.ID] && it.ID != "" {
					listed = append(listed, it.ID)
				}
			}
			if miss := got.missing(listed); len(miss) > 0 {
				t.Fatalf("seed %d: %d of %d listed items never came out: %v", seed, len(miss), len(listed), miss)
			}
		})
	}
}
