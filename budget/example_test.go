package budget_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/store/sqlite"
)

func Example() {
	dir, _ := os.MkdirTemp("", "budget-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hostguard.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	b, err := budget.New(st, budget.Config{
		Sources: []budget.Source{
			// The owner's account allows 200 API calls a day; background
			// work takes the gentle 5 % of it.
			{Name: "indexer", OwnerDailyLimit: budget.Int(200), Share: budget.ShareGentle},
		},
		Now: func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	every, _ := b.PollInterval("indexer")
	fmt.Println("poll the head every", every)

	if _, err := b.Admit(ctx, budget.AdmitParams{Source: "indexer", Kind: budget.KindHeadPoll}); err != nil {
		log.Fatal(err)
	}
	// A second request within the pace (3 s) must wait.
	_, err = b.Admit(ctx, budget.AdmitParams{Source: "indexer", Kind: budget.KindSearch})
	var paced *budget.PacedError
	if errors.As(err, &paced) {
		fmt.Println("paced, retry after", paced.RetryAfter)
	}
	now = now.Add(3 * time.Second)
	// Searches may not take the head polls still reserved today: 10 - 1
	// used - 3 reserved = 6 searches.
	for i := 0; ; i++ {
		_, err := b.Admit(ctx, budget.AdmitParams{Source: "indexer", Kind: budget.KindSearch})
		if errors.Is(err, budget.ErrExhausted) {
			fmt.Println(i, "searches, then:", err)
			break
		}
		now = now.Add(3 * time.Second)
	}
	// Output:
	// poll the head every 4h48m0s
	// paced, retry after 3s
	// 6 searches, then: budget: search on source "indexer" refused: source allowance exhausted (7 used of 7, 3 more kept for today's head polls); resets at 2025-03-15T00:00:00Z
}
