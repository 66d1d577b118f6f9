package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/retry"
)

// retention times one worker's claims, one item and then r.o.batch items
// at a time, each settled, while retention deletes done items in its
// bounded batches. The pruning scheduler's clock runs past KeepDone, so
// every done item the earlier phases made (run succeed first) is old
// enough to go; claims are timed only while it still finds some, so each
// one competes with a delete batch.
func (r *report) retention(ctx context.Context, st hostguard.Store, s *retry.Scheduler) error {
	before, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	done0 := before.ByState[retry.Done.String()]
	if done0 == 0 {
		return errors.New("retention: no done items to delete; run the succeed phase first")
	}
	ahead := retry.DefaultKeepDone + time.Hour
	pruner, err := retry.New(st.(retry.Store), retry.Config{Now: func() time.Time { return time.Now().Add(ahead) }})
	if err != nil {
		return err
	}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	var deleted atomic.Int64
	finished := make(chan error, 1)
	start := time.Now()
	go func() {
		for pctx.Err() == nil {
			n, err := pruner.Prune(pctx)
			deleted.Add(int64(n))
			if err != nil || n == 0 {
				finished <- err
				return
			}
		}
		finished <- nil
	}()
	var pruneErr error
	pruning := func() bool {
		select {
		case pruneErr = <-finished:
			finished <- pruneErr
			return false
		default:
			return true
		}
	}
	lat := map[int][]time.Duration{}
	deadline := start.Add(r.o.duration)
	for i := 0; pruning() && time.Now().Before(deadline); i++ {
		n := 1
		if i%2 == 1 {
			n = r.o.batch
		}
		t := time.Now()
		ls, err := s.Claim(ctx, retry.ClaimParams{N: n, Lease: time.Minute, Worker: "retention"})
		lat[n] = append(lat[n], time.Since(t))
		if err != nil {
			return err
		}
		if err := settle(ctx, s, ls, retry.OpSucceed); err != nil {
			return err
		}
	}
	measured := time.Since(start)
	stop()
	if err := <-finished; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("retention: prune: %w", err)
	}
	el := time.Since(start)
	after, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	for _, n := range []int{1, r.o.batch} {
		r.add(fmt.Sprintf("Claim latency, N=%d, during retention", n), pcts(lat[n]),
			fmt.Sprintf("%d claims by one worker, each settled, over %v while Prune deleted done items", len(lat[n]), measured.Round(time.Millisecond)))
	}
	r.add("Retention (Prune)", fmt.Sprintf("%.0f items/s", float64(deleted.Load())/el.Seconds()),
		fmt.Sprintf("%d of %d done items deleted in %v; Stats.Pruned %d → %d; the store still holds %d items (%d done), none of them deleted but done ones",
			deleted.Load(), done0, el.Round(time.Millisecond), before.Pruned, after.Pruned, after.Total, after.ByState[retry.Done.String()]))
	if lost := before.Total - int(deleted.Load()) - after.Total; lost != 0 {
		return fmt.Errorf("retention: %d items went missing beyond the %d deleted", lost, deleted.Load())
	}
	return nil
}
