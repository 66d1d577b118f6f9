package health_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/store/sqlite"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "health-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hostguard.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	// A fixed clock keeps the output stable; real programs leave Now nil.
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tr, err := health.New(st, health.Config{
		Now:    func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// Some host must answer before failures count: until then this process
	// may simply be offline.
	_ = tr.Touch(ctx, "mirror-a.example", true)
	_ = tr.Touch(ctx, "mirror-b.example", false)
	r, _ := tr.TouchResult(ctx, "Mirror-B.example", false)
	fmt.Printf("%s: %d failures in a row, retry in %v\n", r.Name, r.ConsecutiveFails, r.RetryIn)

	sources := []string{"mirror-a.example", "mirror-b.example", "mirror-c.example"}
	kept, removed, _ := tr.Filter(ctx, sources, health.Healthy)
	fmt.Println("shown to the user:", kept, "removed:", removed)

	now = now.Add(10 * time.Second) // mirror-b's backoff is over
	kept, _, _ = tr.Filter(ctx, sources, health.Available)
	fmt.Println("background may try:", kept)
	// Output:
	// mirror-b.example: 2 failures in a row, retry in 10s
	// shown to the user: [mirror-a.example mirror-c.example] removed: 1
	// background may try: [mirror-a.example mirror-b.example mirror-c.example]
}
