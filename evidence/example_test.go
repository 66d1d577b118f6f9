package evidence_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/store/sqlite"
)

func Example() {
	dir, _ := os.MkdirTemp("", "evidence-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hostguard.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	book, err := evidence.New(st, evidence.Config{
		Fingerprint: evidence.Fingerprint("profile=hd", "lang=en"),
		Now:         func() time.Time { return now },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer book.Close()

	// One indexer found the release playable; another timed out.
	book.Record(ctx, evidence.Check{Source: "indexer-a", Subject: "release-42", Verdict: evidence.Available})
	book.Record(ctx, evidence.Check{Source: "indexer-b", Subject: "release-42", Verdict: evidence.Unknown, Reason: evidence.ReasonTimeout})

	sum, _, _ := book.Summarize(ctx, "release-42")
	fmt.Println("now:", sum.Verdict, sum.Positive)

	now = now.Add(7 * time.Hour) // the positive has expired
	sum, _, _ = book.Summarize(ctx, "release-42")
	fmt.Println("7h later:", sum.Verdict)
	// Output:
	// now: available 1
	// 7h later: unknown
}
