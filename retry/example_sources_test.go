package retry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/sqlite"
)

// A class that escalates by distinct sources rather than by failures in a
// row, inside the README's worker loop: one peer sending a bad piece may
// be broken, three peers agreeing means the torrent is. Claims wait for
// work (Wait) instead of sleeping, and a sighting names its source.
func Example_bySources() {
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

	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	sched, err := retry.New(st, retry.Config{
		Now:    func() time.Time { return now },
		Jitter: -1,
		Classes: map[string]retry.ClassConfig{
			"no_peers": {Ladder: retry.Ladder{time.Hour, 6 * time.Hour, 24 * time.Hour}},
			"hash_mismatch": {Ladder: retry.Ladder{24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour},
				Escalate: retry.BySources},
		},
	})
	if err != nil {
		panic(err)
	}
	const infohash = "c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff"
	if _, err := sched.Add(ctx, retry.NewItem{ID: infohash, Payload: []byte("magnet:?xt=urn:btih:" + infohash)}); err != nil {
		panic(err)
	}

	// Each attempt, when the item is due again, the peer that sent the bad
	// piece.
	due := now
	for _, peer := range []string{"peer-a", "peer-a", "peer-b", "peer-c"} {
		now = due
		leases, err := sched.Claim(ctx, retry.ClaimParams{N: 50, Lease: 5 * time.Minute, Worker: "crawler-1", Wait: time.Minute})
		if err != nil || len(leases) != 1 {
			panic(fmt.Sprint(leases, err))
		}
		outcomes := []retry.Outcome{{Lease: leases[0].Ref(), Op: retry.OpFail,
			Class: "hash_mismatch", Note: "piece 7 failed its hash", Source: peer}}
		errs, err := sched.Settle(ctx, outcomes)
		if err := errors.Join(append(errs, err)...); err != nil {
			panic(err)
		}
		it, _ := sched.Get(ctx, infohash)
		fmt.Printf("bad piece from %s: back in %v\n", peer, it.NextAt.Sub(now))
		due = it.NextAt
	}

	// The DHT shows the hash again: the wait shrinks to ReactivateWithin.
	res, err := sched.Observe(ctx, infohash, retry.ObserveParams{AddIfMissing: true, Source: "dht-node-1"})
	if err != nil {
		panic(err)
	}
	fmt.Println("seen on the DHT: due in", res.NextAt.Sub(now))
	// Output:
	// bad piece from peer-a: back in 24h0m0s
	// bad piece from peer-a: back in 24h0m0s
	// bad piece from peer-b: back in 168h0m0s
	// bad piece from peer-c: back in 720h0m0s
	// seen on the DHT: due in 10m0s
}
