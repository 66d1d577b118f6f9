package queue

import (
	"errors"
	"fmt"
	"time"
)

// Cycle is one burn-down run: n items added, then all worked to success.
type Cycle struct {
	System string
	N      int
	Add    time.Duration // adding all n
	Work   time.Duration // from the first claim to the last success recorded
}

// AddRate is items added per second.
func (c Cycle) AddRate() float64 { return float64(c.N) / c.Add.Seconds() }

// WorkRate is claim → succeed cycles per second.
func (c Cycle) WorkRate() float64 { return float64(c.N) / c.Work.Seconds() }

// CycleOptions tunes a burn-down run. Zero fields take the defaults named.
type CycleOptions struct {
	// N is how many items to add and work; 0 means 50 000.
	N int
	// AddBatch is how many items one insert call carries; 0 means 5 000
	// (River's own benchmark uses 5 000).
	AddBatch int
	// Workers is hostguard's claiming goroutines; 0 means 4.
	Workers int
	// ClaimBatch is how many items a hostguard worker claims and settles at
	// once; 0 means 100.
	ClaimBatch int
	// RiverWorkers is River's MaxWorkers for its one queue; 0 means 1 000.
	RiverWorkers int
	// Limit abandons a run that takes longer; 0 means 5 minutes.
	Limit time.Duration
}

func (o CycleOptions) withDefaults() CycleOptions {
	if o.N == 0 {
		o.N = 50_000
	}
	if o.AddBatch == 0 {
		o.AddBatch = 5_000
	}
	if o.Workers == 0 {
		o.Workers = 4
	}
	if o.ClaimBatch == 0 {
		o.ClaimBatch = 100
	}
	if o.RiverWorkers == 0 {
		o.RiverWorkers = 1_000
	}
	if o.Limit == 0 {
		o.Limit = 5 * time.Minute
	}
	return o
}

func (o CycleOptions) validate() error {
	var errs []error
	check := func(name string, v, lo, hi int) {
		if v < lo || v > hi {
			errs = append(errs, fmt.Errorf("queue: %s is %d, want %d..%d", name, v, lo, hi))
		}
	}
	check("N", o.N, 1, 10_000_000)
	check("AddBatch", o.AddBatch, 1, 10_000)
	check("Workers", o.Workers, 1, 256)
	check("ClaimBatch", o.ClaimBatch, 1, 1_000)
	check("RiverWorkers", o.RiverWorkers, 1, 10_000)
	if o.Limit < 0 {
		errs = append(errs, fmt.Errorf("queue: Limit is %v, must not be negative", o.Limit))
	}
	return errors.Join(errs...)
}
