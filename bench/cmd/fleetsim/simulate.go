package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hostguard/hostguard/bench/fleet"
)

// sims is every run's summary, per policy, in round order.
type sims struct {
	plan *fleet.Plan
	runs map[string][]fleet.Summary
}

// simulate runs each policy opts.rounds times. Rounds interleave the
// policies, each round starting one policy later than the last, so a slow
// spell on a noisy machine does not land on one policy only.
func simulate(ctx context.Context, opts options, log io.Writer) (*sims, error) {
	plan, err := fleet.NewPlan(opts.cfg)
	if err != nil {
		return nil, err
	}
	out := &sims{plan: plan, runs: map[string][]fleet.Summary{}}
	n := len(opts.policies)
	for r := range opts.rounds {
		for i := range n {
			pol := opts.policies[(r+i)%n]
			res, err := fleet.Run(ctx, plan, pol)
			if err != nil {
				return nil, err
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s := fleet.Summarize(plan, res)
			out.runs[pol.Name] = append(out.runs[pol.Name], s)
			fmt.Fprintf(log, "round %d %-14s wall %6.2fs sent-to-down %4d false-refusals %v complete %v\n",
				r+1, pol.Name, s.Wall.Seconds(), s.SentToDown, s.FalseRefusals, s.Complete)
		}
	}
	return out, nil
}
