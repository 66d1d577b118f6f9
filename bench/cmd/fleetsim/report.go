package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hostguard/hostguard/bench/fleet"
)

// report writes the Markdown tables: one row per policy, each figure the
// median over rounds.
func report(w io.Writer, opts options, s *sims) error {
	p := s.plan
	t := p.Config.Timeout
	var b strings.Builder
	fmt.Fprintf(&b, "Finished: %s. Machine: %d CPUs, %s %s/%s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "Command: `go run ./cmd/fleetsim %s` (in bench/)\n\n", strings.Join(opts.args, " "))
	kinds := map[fleet.Kind]int{}
	for _, h := range p.Hosts {
		kinds[h.Kind]++
	}
	var mix []string
	for _, k := range fleet.Kinds() {
		mix = append(mix, fmt.Sprintf("%d %s", kinds[k], k))
	}
	fmt.Fprintf(&b, "Fleet: %s. Workload: %d workers × %d sessions, %d requests in all. T = %v (stands for 30 s). %d rounds; every figure is the median over rounds.\n\n",
		strings.Join(mix, ", "), p.Config.Workers, p.Config.Sessions, p.Requests(), t, opts.rounds)

	b.WriteString("| policy | mean worker finish (s) | × oracle | wall (s), median (min–max) | × oracle | sent to down hosts | worker-s blocked on down hosts | false refusals: flapping (up) / slow / 5xx / healthy | recovery p50 / max (ms), missed | hanging outage waste p50 / max (×T) | dead-host waste per host (×T) | probes sent | complete |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|---|\n")
	oracle := s.runs["oracle"]
	for _, pol := range opts.policies {
		runs := s.runs[pol.Name]
		if len(runs) == 0 {
			continue
		}
		ratio := make([]float64, 0, len(runs))
		meanRatio := make([]float64, 0, len(runs))
		for i, r := range runs {
			if i < len(oracle) && oracle[i].Wall > 0 && oracle[i].MeanFinish > 0 {
				ratio = append(ratio, r.Wall.Seconds()/oracle[i].Wall.Seconds())
				meanRatio = append(meanRatio, r.MeanFinish.Seconds()/oracle[i].MeanFinish.Seconds())
			}
		}
		complete := 0
		for _, r := range runs {
			if r.Complete {
				complete++
			}
		}
		fr := func(k fleet.Kind) float64 {
			return med(runs, func(r fleet.Summary) float64 { return float64(r.FalseRefusals[k]) })
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f (%.2f–%.2f) | %.2f | %.0f | %.2f | %.0f / %.0f / %.0f / %.0f | %.0f / %.0f, %.0f | %.2f / %.2f | %.2f | %.0f | %d/%d |\n",
			pol.Name,
			med(runs, func(r fleet.Summary) float64 { return r.MeanFinish.Seconds() }),
			median(meanRatio),
			med(runs, func(r fleet.Summary) float64 { return r.Wall.Seconds() }),
			extreme(runs, 0, func(r fleet.Summary) float64 { return r.Wall.Seconds() }),
			extreme(runs, 1, func(r fleet.Summary) float64 { return r.Wall.Seconds() }),
			median(ratio),
			med(runs, func(r fleet.Summary) float64 { return float64(r.SentToDown) }),
			med(runs, func(r fleet.Summary) float64 { return r.Blocked.Seconds() }),
			fr(fleet.Flapping), fr(fleet.Slow), fr(fleet.ServerError), fr(fleet.Healthy),
			med(runs, func(r fleet.Summary) float64 { return ms(fleet.Quantile(r.Recoveries, 0.5)) }),
			med(runs, func(r fleet.Summary) float64 { return ms(fleet.Quantile(r.Recoveries, 1)) }),
			med(runs, func(r fleet.Summary) float64 { return float64(r.Missed) }),
			med(runs, func(r fleet.Summary) float64 { return units(fleet.Quantile(r.OutageWaste, 0.5), t) }),
			med(runs, func(r fleet.Summary) float64 { return units(fleet.Quantile(r.OutageWaste, 1), t) }),
			med(runs, func(r fleet.Summary) float64 { return units(fleet.Quantile(r.DeadWaste, 0.5), t) }),
			med(runs, func(r fleet.Summary) float64 { return float64(r.Probes) }),
			complete, len(runs))
	}
	if p.Config.Impatient > 0 {
		writeImpatient(&b, opts, s)
	}
	b.WriteString("\nPolicies:\n\n")
	for _, pol := range opts.policies {
		fmt.Fprintf(&b, "- `%s`: %s\n", pol.Name, pol.Note)
	}
	if len(s.outages) > 0 {
		writeOutages(&b, s.outages, t, opts.downFor)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeImpatient is the table for impatient clients: refusals of hosts
// that answer within every client's patience must be none, and a dead
// host should be refused after two fan-outs, the second give-up.
func writeImpatient(b *strings.Builder, opts options, s *sims) {
	c := s.plan.Config
	n := 0
	for _, d := range s.plan.Patience {
		if d > 0 {
			n++
		}
	}
	fmt.Fprintf(b, "\nImpatient clients: %d of %d workers give up after %.2g T (their request's own deadline); slow hosts need 3/4 T. Medians over rounds.\n\n", n, c.Workers, float64(c.Patience)/float64(c.Timeout))
	b.WriteString("| policy | refusals of hosts never down that answer within every client's patience | refusals of slow hosts | … of slow hosts once seen answering | dead hosts: fan-outs before the first refusal, median / max | dead hosts never refused |\n")
	b.WriteString("|---|---:|---:|---:|---|---:|\n")
	for _, pol := range opts.policies {
		runs := s.runs[pol.Name]
		if len(runs) == 0 {
			continue
		}
		dead := 0
		for _, h := range s.plan.Hosts {
			if h.Kind == fleet.Dead {
				dead++
			}
		}
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %.0f | %.0f / %.0f | %.0f |\n", pol.Name,
			med(runs, func(r fleet.Summary) float64 { return float64(r.PatientRefusals) }),
			med(runs, func(r fleet.Summary) float64 { return float64(r.FalseRefusals[fleet.Slow]) }),
			med(runs, func(r fleet.Summary) float64 { return float64(r.SlowAfterAnswer) }),
			med(runs, func(r fleet.Summary) float64 { return float64(quantileInt(r.DeadFanOuts, 0.5)) }),
			med(runs, func(r fleet.Summary) float64 { return float64(quantileInt(r.DeadFanOuts, 1)) }),
			med(runs, func(r fleet.Summary) float64 { return float64(dead - len(r.DeadFanOuts)) }))
	}
}

func quantileInt(xs []int, q float64) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

func writeOutages(b *strings.Builder, rows []outageRow, t time.Duration, downFor int64) {
	fmt.Fprintf(b, "\nLong outage: one host down for %d T from the start, then up for %d T; one worker sends a fan-out of 3 requests every T/4, waiting for each. One run per row.\n\n", downFor, downFor/3)
	b.WriteString("| host while down | policy | probes sent | workload requests sent while down | worker-s blocked while down | time to notice recovery (×T) | refused after recovery |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		how := "refuses"
		if r.hang {
			how = "hangs"
		}
		notice := "not noticed"
		if r.res.Noticed {
			notice = fmt.Sprintf("%.2f", units(r.res.Notice, t))
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %.2f | %s | %d |\n", how, r.pol.Name, r.res.Probes, r.res.SentDown, r.res.Blocked.Seconds(), notice, r.res.RefusedUp)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func units(d, t time.Duration) float64 { return float64(d) / float64(t) }

func med(runs []fleet.Summary, f func(fleet.Summary) float64) float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return median(xs)
}

// extreme returns the smallest (q = 0) or largest (q = 1) of f over runs.
func extreme(runs []fleet.Summary, q int, f func(fleet.Summary) float64) float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	if q == 0 {
		return slices.Min(xs)
	}
	return slices.Max(xs)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
