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

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "retry-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hostguard.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()

	// A fixed clock and no jitter keep the printed times exact.
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s, err := retry.New(st, retry.Config{
		Now:     func() time.Time { return now },
		Jitter:  -1,
		Classes: map[string]retry.ClassConfig{"no_peers": {Ladder: retry.Ladder{time.Hour, 6 * time.Hour}}},
	})
	if err != nil {
		panic(err)
	}
	if _, err := s.Add(ctx,
		retry.NewItem{ID: "5a1f0c0de5a1f0c0de5a1f0c0de5a1f0c0de5a1f"},
		retry.NewItem{ID: "b0a7b0a7b0a7b0a7b0a7b0a7b0a7b0a7b0a7b0a7", Priority: 1},
	); err != nil {
		panic(err)
	}

	leases, err := s.Claim(ctx, retry.ClaimParams{N: 10, Lease: time.Minute, Worker: "example"})
	if err != nil {
		panic(err)
	}
	for _, l := range leases {
		fmt.Printf("claimed %.8s… attempt %d\n", l.ID, l.Attempt)
		if l.Priority > 0 {
			err = s.Succeed(ctx, l.Ref())
		} else {
			err = s.Fail(ctx, l.Ref(), "no_peers", "no peer answered")
		}
		if err != nil {
			panic(err)
		}
	}

	it, _ := s.Get(ctx, "5a1f0c0de5a1f0c0de5a1f0c0de5a1f0c0de5a1f")
	fmt.Println(it.State, "in", it.NextAt.Sub(now), "after", it.LastClass)

	// A fresh sighting pulls the retry forward and raises its priority.
	now = now.Add(5 * time.Minute)
	res, _ := s.Observe(ctx, it.ID, retry.ObserveParams{})
	fmt.Println("observed: due in", res.NextAt.Sub(now), "priority", res.Priority)
	// Output:
	// claimed b0a7b0a7… attempt 1
	// claimed 5a1f0c0d… attempt 1
	// scheduled in 1h0m0s after no_peers
	// observed: due in 10m0s priority 1
}

// A worker that waits for work instead of sleeping between empty claims:
// the claim returns as soon as another part of the program adds an item.
func ExampleScheduler_Claim_wait() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "retry-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hostguard.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	s, err := retry.New(st, retry.Config{})
	if err != nil {
		panic(err)
	}

	go func() {
		for s.Waiting() == 0 { // for the example only: add once the worker waits
			time.Sleep(time.Millisecond)
		}
		if _, err := s.Add(ctx, retry.NewItem{ID: "late-arrival"}); err != nil {
			panic(err)
		}
	}()
	leases, err := s.Claim(ctx, retry.ClaimParams{N: 10, Lease: time.Minute, Wait: time.Minute})
	if err != nil {
		panic(err)
	}
	fmt.Println("claimed", leases[0].ID)
	// Output:
	// claimed late-arrival
}

// A worker loop that reports each batch's successes with its next claim:
// one store transaction per batch. The call that finds no more work still
// settles the last batch.
func ExampleScheduler_SucceedAndClaim() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "retry-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hostguard.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	// A clock that moves on at each reading makes each item due after the
	// one added before it, so the claims take them in order.
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s, err := retry.New(st, retry.Config{Now: func() time.Time { now = now.Add(time.Millisecond); return now }})
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if _, err := s.Add(ctx, retry.NewItem{ID: id}); err != nil {
			panic(err)
		}
	}

	var done []retry.LeaseRef
	for {
		leases, errs, err := s.SucceedAndClaim(ctx, done, retry.ClaimParams{N: 2, Lease: time.Minute})
		if err != nil {
			panic(err)
		}
		for i, err := range errs {
			if err != nil {
				fmt.Println(done[i].ID, err) // a lease lost meanwhile: someone else has the item
			}
		}
		if len(leases) == 0 {
			break
		}
		done = done[:0]
		for _, l := range leases {
			fmt.Println("working on", l.ID)
			done = append(done, l.Ref())
		}
	}
	st2, err := s.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("done:", st2.ByState["done"])
	// Output:
	// working on a
	// working on b
	// working on c
	// working on d
	// working on e
	// done: 5
}
