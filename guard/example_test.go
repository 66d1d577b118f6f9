package guard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

// A guard that checks a dead host itself once its open period is over, so
// that the callers who keep asking are refused at once instead of one of
// them waiting on the host as the trial.
func ExampleConfig_probe() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var probed atomic.Value
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g := guard.New(guard.Config{
		Now:      clock,
		Disabled: func() bool { return false },
		// transport.ProbeFunc sends HEAD <endpoint>/; this one pretends
		// the host is back.
		Probe: func(ctx context.Context, endpoint string) error {
			probed.Store(endpoint)
			return nil
		},
	})
	defer g.Close()

	for range 2 {
		t, _ := g.Acquire("https://feeds.example/rss")
		t.Failed(context.DeadlineExceeded)
	}
	_, err := g.Acquire("https://feeds.example/rss") // asked for while open
	fmt.Println("refused:", errors.Is(err, guard.ErrOpen))

	mu.Lock()
	now = now.Add(guard.DefaultOpenFor)
	mu.Unlock()
	// The open period is over: this caller is refused while the guard
	// probes (a timer would have started the probe at this moment too).
	_, err = g.Acquire("https://feeds.example/rss")
	var open *guard.OpenError
	fmt.Println("refused while probing:", errors.As(err, &open) && open.RetryAfter == 0)

	g.Close() // waits for the probe
	fmt.Println("probed:", probed.Load())
	fmt.Println("state:", g.State("https://feeds.example/"))
	// Output:
	// refused: true
	// refused while probing: true
	// probed: https://feeds.example
	// state: closed
}

// With Config.TrialWait, callers that find an endpoint's half-open trial
// out wait for its outcome; AcquireContext lets their context bound that
// wait.
func ExampleGuard_AcquireContext() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	g := guard.New(guard.Config{
		Now:       func() time.Time { return now },
		Disabled:  func() bool { return false },
		TrialWait: 2 * time.Second,
	})
	const feed = "https://feeds.example/rss"
	t, _ := g.Acquire(feed)
	t.AnsweredAfter(100 * time.Millisecond) // the host answers in 100 ms
	for range 2 {
		t, _ := g.Acquire(feed)
		t.Failed(context.DeadlineExceeded)
	}
	now = now.Add(guard.DefaultOpenFor)
	trial, _ := g.Acquire(feed)
	fmt.Println("trial:", trial.Trial())

	// 50 ms left is less than the host needs: refused at once.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := g.AcquireContext(ctx, feed)
	cancel()
	fmt.Println("short deadline refused:", errors.Is(err, guard.ErrOpen))

	// A caller whose context ends while it waits gives up.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = g.AcquireContext(ctx, feed)
	fmt.Println("gave up:", errors.Is(err, guard.ErrGaveUp), errors.Is(err, context.Canceled))

	// A caller that waits goes out once the trial answers.
	got := make(chan error)
	go func() {
		t, err := g.AcquireContext(context.Background(), feed)
		if err == nil {
			t.Answered()
		}
		got <- err
	}()
	trial.Answered()
	fmt.Println("waiting caller:", <-got)
	// Output:
	// trial: true
	// short deadline refused: true
	// gave up: true true
	// waiting caller: <nil>
}

// watcher is a Sharer that only observes: it claims no leases, so the
// guard's trials are its own, and it sees each transition once.
type watcher struct{ seen chan guard.Transition }

func (w watcher) Publish(t guard.Transition) { w.seen <- t }

// ExampleSharer learns when an endpoint closes on an answer, for example to
// wake work that waits for its host, and shows that a remote opening, fed
// in with Apply, makes the guard fail fast without counting anything.
func ExampleSharer() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	w := watcher{seen: make(chan guard.Transition, 8)}
	g := guard.New(guard.Config{
		Now:      func() time.Time { return now },
		Disabled: func() bool { return false },
		Share:    w,
	})
	defer g.Close()

	// Another node's opening; this guard has seen no answer from the host.
	g.Apply(guard.Transition{
		Endpoint: "https://feeds.example", Change: guard.ChangeOpened,
		At: now, Since: now.Add(-time.Minute), Until: now.Add(30 * time.Second),
	})
	_, err := g.Acquire("https://feeds.example/rss")
	var open *guard.OpenError
	if errors.As(err, &open) {
		fmt.Println("skipped, retry in", open.RetryAfter)
	}

	// Its open period ends; this guard's trial is answered.
	now = now.Add(30 * time.Second)
	t, _ := g.Acquire("https://feeds.example/rss")
	t.Answered()
	done := <-w.seen
	fmt.Println(done.Endpoint, done.Change)
	// Output:
	// skipped, retry in 30s
	// https://feeds.example answered
}
