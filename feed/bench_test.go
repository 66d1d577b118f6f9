package feed_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/hostguard/hostguard/store/storetest"
)

// benchEngines opens a fresh store of each engine inside each (sub-)
// benchmark run; -count repeats a sub-benchmark within one parent run, so
// a store opened by the parent would carry state from one repetition to the
// next.
var benchEngines = []struct {
	name string
	open func(b *testing.B) feed.Store
}{
	{"sqlite", func(b *testing.B) feed.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "hostguard.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(b *testing.B) feed.Store {
		st, err := postgres.Open(context.Background(), storetest.PostgresDSN(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}},
}

// BenchmarkSyncSteady is the common case: one head page with a few new
// items. It measures the Syncer and its store, not the network.
func BenchmarkSyncSteady(b *testing.B) {
	for _, e := range benchEngines {
		b.Run(e.name, func(b *testing.B) {
			s, err := feed.NewSyncer(e.open(b), feed.Config{})
			if err != nil {
				b.Fatal(err)
			}
			src := newList(100)
			src.publish(100)
			ctx := context.Background()
			if _, err := s.Sync(ctx, "bench", src); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				src.publish(3)
				res, err := s.Sync(ctx, "bench", src)
				if err != nil || len(res.Items) != 3 || res.Pages != 1 {
					b.Fatalf("sync: %d items, %d pages, %v", len(res.Items), res.Pages, err)
				}
			}
		})
	}
}

// BenchmarkSyncBurst reads 500 new items in five pages of 100 per sync.
func BenchmarkSyncBurst(b *testing.B) {
	for _, e := range benchEngines {
		b.Run(e.name, func(b *testing.B) {
			s, err := feed.NewSyncer(e.open(b), feed.Config{MaxPages: 6})
			if err != nil {
				b.Fatal(err)
			}
			src := newList(100)
			src.publish(100)
			ctx := context.Background()
			if _, err := s.Sync(ctx, "bench", src); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				src.publish(490)
				res, err := s.Sync(ctx, "bench", src)
				if err != nil || len(res.Items) != 490 || res.Stop != feed.StopCaughtUp {
					b.Fatalf("sync: %d items, stop %s, %v", len(res.Items), res.Stop, err)
				}
			}
		})
	}
}
