package retry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/sqlite"
)

// An item names the host it depends on; a failure that says the host did
// not answer parks it on its ladder, and the host answering again makes it
// due within the wake jitter, its failures in a row kept.
func ExampleScheduler_WakeHost() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "retry-wake-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hostguard.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()

	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// No jitter on either side keeps the printed times exact.
	s, err := retry.New(st, retry.Config{Now: func() time.Time { return now }, Jitter: -1, WakeJitter: -1})
	if err != nil {
		panic(err)
	}
	if _, err := s.Add(ctx, retry.NewItem{ID: "feed-page-7", Host: "Indexer.Example"}); err != nil {
		panic(err)
	}
	leases, err := s.Claim(ctx, retry.ClaimParams{N: 1, Lease: time.Minute})
	if err != nil {
		panic(err)
	}
	if err := s.Fail(ctx, leases[0].Ref(), "timeout", "no answer in 30 s"); err != nil {
		panic(err)
	}
	it, _ := s.Get(ctx, "feed-page-7")
	fmt.Println("parked until", it.NextAt.Format(time.TimeOnly), "behind", it.Host)

	now = now.Add(5 * time.Minute) // the host answers a request of someone else's
	res, err := s.WakeHost(ctx, "indexer.example")
	if err != nil {
		panic(err)
	}
	it, _ = s.Get(ctx, "feed-page-7")
	fmt.Println("woke", res.Woken, "item: due", it.NextAt.Format(time.TimeOnly), "failures", it.Failures)
	// Output:
	// parked until 12:30:00 behind indexer.example
	// woke 1 item: due 12:05:00 failures 1
}
