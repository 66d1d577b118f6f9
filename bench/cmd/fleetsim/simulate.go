package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hostguard/hostguard/bench/fleet"
)

// sims is every run's summary, per policy, in round order.
type sims struct {
	plan    *fleet.Plan
	runs    map[string][]fleet.Summary
	outages []outageRow // the long-outage phase, if run
}

type outageRow struct {
	hang bool
	pol  fleet.Policy
	res  fleet.OutageResult
}

// outagePolicies are what the long-outage phase compares: hostguard
// without and with probes, each growth cap with probes and the daemon's
// with growth alone, the daemon's settings, and the two peers.
func outagePolicies(caps []int64) []fleet.Policy {
	pols := []fleet.Policy{fleet.HostguardPolicy(false, 0), fleet.HostguardPolicy(true, 0)}
	for _, c := range caps {
		pols = append(pols, fleet.HostguardPolicy(true, time.Duration(c)))
	}
	pols = append(pols, fleet.HostguardPolicy(false, fleet.DaemonMaxOpenFor))
	for _, name := range []string{"hostguard", "gobreaker", "failsafe"} {
		p, _ := fleet.PolicyNamed(name)
		pols = append(pols, p)
	}
	return pols
}

// simulateOutage runs the long-outage phase once per policy, for a host
// that hangs and for one that refuses.
func simulateOutage(ctx context.Context, opts options, out *sims, log io.Writer) error {
	for _, hang := range []bool{true, false} {
		for _, pol := range outagePolicies(opts.caps) {
			t := opts.cfg.Timeout
			down := time.Duration(opts.downFor) * t
			res, err := fleet.RunLongOutage(ctx, fleet.LongOutage{Timeout: t, Down: down, After: down / 3, Hang: hang}, pol)
			if err != nil {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			out.outages = append(out.outages, outageRow{hang, pol, res})
			fmt.Fprintf(log, "long outage (hang %v) %-26s probes %3d sent-down %3d notice %v refused-up %d\n",
				hang, pol.Name, res.Probes, res.SentDown, res.Notice.Round(time.Millisecond), res.RefusedUp)
		}
	}
	return nil
}

// simulate runs each policy opts.rounds times. Rounds interleave the
// policies, each round starting one policy later than the last, so a slow
// spell on a noisy machine does not land on one policy only.
func simulate(ctx context.Context, opts options, trace *fleet.Tracer, log io.Writer) (*sims, error) {
	plan, err := fleet.NewPlan(opts.cfg)
	if err != nil {
		return nil, err
	}
	out := &sims{plan: plan, runs: map[string][]fleet.Summary{}}
	n := len(opts.policies)
	for r := range opts.rounds {
		for i := range n {
			pol := opts.policies[(r+i)%n]
			res, err := fleet.RunTraced(ctx, plan, pol, trace)
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
	if opts.outage {
		if err := simulateOutage(ctx, opts, out, log); err != nil {
			return nil, err
		}
	}
	return out, nil
}
