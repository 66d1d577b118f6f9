package queue

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// DormantOptions tunes the backlog scenario. Zero fields take the defaults
// named.
type DormantOptions struct {
	// Backlog is how many items wait a month before they are due; 0 means
	// 1 000 000.
	Backlog int
	// Trickle is how many due items are added, one at a time, while one
	// worker claims; 0 means 2 000.
	Trickle int
	// Every is the gap between two trickle items; 0 means 5 ms.
	Every time.Duration
	// Poll is how long the worker waits after an empty claim; 0 means 5 ms.
	Poll time.Duration
	// Burst is how many backlog items are reactivated at once (twice: one
	// call per item, then in batches where the system can); 0 means
	// 10 000, at most Backlog/2.
	Burst int
	// Limit abandons a run that takes longer; 0 means 10 minutes.
	Limit time.Duration
	// SyncSightings makes hostguard's sightings wait for the disk
	// (retry.Config.SyncSightings), as River's JobRetry does.
	SyncSightings bool
}

func (o DormantOptions) withDefaults() DormantOptions {
	if o.Backlog == 0 {
		o.Backlog = 1_000_000
	}
	if o.Trickle == 0 {
		o.Trickle = 2_000
	}
	if o.Every == 0 {
		o.Every = 5 * time.Millisecond
	}
	if o.Poll == 0 {
		o.Poll = 5 * time.Millisecond
	}
	if o.Burst == 0 {
		o.Burst = 10_000
	}
	if o.Limit == 0 {
		o.Limit = 10 * time.Minute
	}
	return o
}

func (o DormantOptions) validate() error {
	var errs []error
	if o.Backlog < 1 || o.Backlog > 100_000_000 {
		errs = append(errs, fmt.Errorf("queue: Backlog is %d, want 1..100000000", o.Backlog))
	}
	if o.Trickle < 1 || o.Trickle > 1_000_000 {
		errs = append(errs, fmt.Errorf("queue: Trickle is %d, want 1..1000000", o.Trickle))
	}
	// Two bursts take disjoint items, every Backlog/Burst-th and the one after.
	if o.Burst < 1 || o.Burst > o.Backlog/2 {
		errs = append(errs, fmt.Errorf("queue: Burst is %d, want 1..Backlog/2 (%d)", o.Burst, o.Backlog/2))
	}
	if o.Every < 0 || o.Poll <= 0 || o.Limit < 0 {
		errs = append(errs, fmt.Errorf("queue: Every %v, Poll %v, Limit %v: Poll must be positive, the others not negative", o.Every, o.Poll, o.Limit))
	}
	return errors.Join(errs...)
}

// Dormant is what the backlog scenario measured.
type Dormant struct {
	System  string
	Backlog int
	Load    time.Duration // adding the backlog
	// Claims holds the duration of every claim call made while the
	// polling trickle ran (hostguard only: River's fetches are internal).
	Claims []time.Duration
	// Lags holds, for each trickle item, the time from its insert starting
	// to a worker holding it; for hostguard the worker waits in a blocking
	// claim. PollLags is the same for a hostguard worker that sleeps Poll
	// after an empty claim instead (empty for River).
	Lags     []time.Duration
	PollLags []time.Duration
	// Burst is how many backlog items were reactivated; Reactivate is how
	// long the calls took, and Drain the time from the first call until
	// every one of them had been worked.
	Burst      int
	Reactivate time.Duration
	Drain      time.Duration
	// BatchReactivate and BatchDrain are the same for a second burst of
	// as many other backlog items reactivated in batches (hostguard's
	// ObserveMany); zero where the system has no batch call.
	BatchReactivate time.Duration
	BatchDrain      time.Duration
}

// Quantile returns the q-quantile (0..1) of ds by nearest rank; 0 for none.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}
