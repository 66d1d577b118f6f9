package feed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/store/sqlite"
)

func Example() {
	dir, _ := os.MkdirTemp("", "feed-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "hostguard.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	// A feed of 50 items, newest first, served 10 to a page.
	var items []feed.Item
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	publish := func(n int) {
		for range n {
			items = append([]feed.Item{{ID: fmt.Sprint("rel-", len(items)+1), Published: t0.Add(time.Duration(len(items)) * time.Second)}}, items...)
		}
	}
	publish(50)
	src := feed.SourceFunc(func(_ context.Context, offset int) ([]feed.Item, error) {
		return items[min(offset, len(items)):min(offset+10, len(items))], nil
	})

	s, _ := feed.NewSyncer(st, feed.Config{MaxPages: 3})
	ctx := context.Background()
	res, _ := s.Sync(ctx, "example", src)
	fmt.Println("first sync:", len(res.Items), "items in", res.Pages, "page")

	publish(4)
	res, _ = s.Sync(ctx, "example", src)
	fmt.Println("4 new:", len(res.Items), "items in", res.Pages, "page; newest", res.Items[0].ID)

	publish(45) // more than MaxPages can read at once
	res, _ = s.Sync(ctx, "example", src)
	fmt.Println("burst:", len(res.Items), "items,", res.Stop, "with", res.Gaps, "gap")
	res, _ = s.Sync(ctx, "example", src)
	fmt.Println("next:", len(res.Items), "items,", res.Stop)
	// Output:
	// first sync: 10 items in 1 page
	// 4 new: 4 items in 1 page; newest rel-54
	// burst: 28 items, max-pages with 1 gap
	// next: 17 items, caught-up
}
