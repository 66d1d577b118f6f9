package guard_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/guard"
)

func Example() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	g := guard.New(guard.Config{
		Now:      func() time.Time { return now },
		Disabled: func() bool { return false }, // ignore HOSTGUARD_DISABLE_GUARD here
		OnTransition: func(endpoint string, from, to guard.State) {
			fmt.Printf("%s: %s -> %s\n", endpoint, from, to)
		},
	})

	// fetch stands in for an HTTP request to a host that never answers.
	fetch := func(rawURL string) error {
		t, err := g.Acquire(rawURL)
		if err != nil {
			return err
		}
		defer t.Release()
		err = context.DeadlineExceeded
		t.Failed(err)
		return err
	}

	for range 3 {
		err := fetch("https://user:secret@Feeds.Example/rss?key=abc")
		var open *guard.OpenError
		if errors.As(err, &open) {
			fmt.Printf("skipped %s, retry in %v\n", open.Endpoint, open.RetryAfter)
		}
	}

	now = now.Add(30 * time.Second)
	t, _ := g.Acquire("https://feeds.example/rss")
	fmt.Println("trial:", t.Trial())
	t.Answered() // any HTTP status will do
	fmt.Println("state:", g.State("https://feeds.example/"))

	// Output:
	// https://feeds.example: closed -> open
	// skipped https://feeds.example, retry in 30s
	// https://feeds.example: open -> half-open
	// trial: true
	// https://feeds.example: half-open -> closed
	// state: closed
}
