package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/bench/fleet"
)

type options struct {
	cfg      fleet.Config
	rounds   int
	policies []fleet.Policy
	outage   bool        // run the long-outage phase too
	downFor  int64       // its outage, in T
	caps     []int64     // growth caps (×T) the long-outage phase compares
	args     []string    // as given, for the report
	lags     *fleet.Lags // sharing delays of the -nodes policy; nil without it
	trace    string      // -trace: where the fleet runs' traces go; empty for none
}

func parseFlags(args []string, log io.Writer) (options, error) {
	fs := flag.NewFlagSet("fleetsim", flag.ContinueOnError)
	fs.SetOutput(log)
	var (
		seed      = fs.Uint64("seed", 1, "seed of the fleet, its outages and the workload")
		timeout   = fs.Duration("timeout", 300*time.Millisecond, "client header timeout; the unit of every duration (stands for 30 s)")
		workers   = fs.Int("workers", 8, "clients browsing at once")
		sessions  = fs.Int("sessions", 30, "catalogue sessions per worker")
		limit     = fs.Duration("limit", time.Minute, "abandon a run after this long")
		rounds    = fs.Int("rounds", 3, "runs per policy, interleaved; the report shows medians")
		mix       = fs.String("mix", "", "hosts per kind, e.g. healthy=14,dead=2,refused=2,flapping=6,slow=3,5xx=3 (default that)")
		policies  = fs.String("policies", "", "comma-separated policies to run (default all; oracle is always run)")
		outage    = fs.Bool("long-outage", false, "also run the long-outage phase: one host down for 30 T while asked for, then up for 10 T")
		caps      = fs.String("caps", "2,4,8", "growth caps (MaxOpenFor in T) the long-outage phase compares")
		downFor   = fs.Int64("outage-for", 30, "the long-outage phase's outage in T; the host then stays up a third as long")
		impatient = fs.Float64("impatient", 0, "share of workers (0..1) whose clients give up before a slow host answers")
		patience  = fs.Float64("patience", 0.5, "how long an impatient worker waits, in T (default half)")
		nodes     = fs.Int("nodes", 0, "also run hostguard on this many nodes over PostgreSQL (-pg), sharing verdicts and not, and gobreaker's distributed breaker on as many over one in-memory store; 0: no")
		trace     = fs.String("trace", "", "write what hostguard's guards did in each fleet run (transitions, probes, the refusals of flapping hosts while up) to this file")
		pg        = fs.String("pg", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "PostgreSQL for -nodes; each run gets a schema of its own")
	)
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("fleetsim: unexpected argument %q", fs.Arg(0))
	}
	if *impatient < 0 || *impatient > 1 {
		return options{}, fmt.Errorf("fleetsim: -impatient %v, want 0..1", *impatient)
	}
	if *patience <= 0 || *patience > 1 {
		return options{}, fmt.Errorf("fleetsim: -patience %v, want above 0 and at most 1 (T)", *patience)
	}
	if *rounds < 1 || *rounds > 100 {
		return options{}, fmt.Errorf("fleetsim: -rounds %d, want 1..100", *rounds)
	}
	m, err := parseMix(*mix)
	if err != nil {
		return options{}, err
	}
	opts := options{
		cfg: fleet.Config{Seed: *seed, Timeout: *timeout, Mix: m, Workers: *workers, Sessions: *sessions, Limit: *limit,
			Impatient: *impatient, Patience: time.Duration(*patience * float64(*timeout))},
		rounds: *rounds,
		args:   args,
	}
	if opts.policies, err = parsePolicies(*policies); err != nil {
		return options{}, err
	}
	if *nodes < 0 || *nodes > 64 {
		return options{}, fmt.Errorf("fleetsim: -nodes %d, want 0..64", *nodes)
	}
	if *nodes > 0 {
		opts.lags = &fleet.Lags{}
		opts.policies = append(opts.policies, fleet.NodesPolicy(*pg, *nodes, true, opts.lags), fleet.NodesPolicy(*pg, *nodes, false, nil),
			fleet.GobreakerNodesPolicy(*nodes))
	}
	opts.trace = *trace
	opts.outage = *outage
	if *downFor < 3 || *downFor > 1000 {
		return options{}, fmt.Errorf("fleetsim: -outage-for %d, want 3..1000", *downFor)
	}
	opts.downFor = *downFor
	for part := range strings.SplitSeq(*caps, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil || n < 1 || n > 1000 {
			return options{}, fmt.Errorf("fleetsim: -caps: %q is not a whole number of T in 1..1000", part)
		}
		opts.caps = append(opts.caps, n)
	}
	return opts, nil
}

func parseMix(s string) (fleet.Mix, error) {
	var m fleet.Mix
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	fields := map[string]*int{
		"healthy": &m.Healthy, "dead": &m.Dead, "refused": &m.Refused,
		"flapping": &m.Flapping, "slow": &m.Slow, "5xx": &m.ServerError,
	}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		p, known := fields[k]
		if !ok || !known {
			return m, fmt.Errorf("fleetsim: -mix: %q is not kind=count with a kind among healthy, dead, refused, flapping, slow, 5xx", part)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return m, fmt.Errorf("fleetsim: -mix: count for %s is %q, want a whole number ≥ 0", k, v)
		}
		*p = n
	}
	if m == (fleet.Mix{}) {
		return m, errors.New("fleetsim: -mix: every count is zero; the fleet needs a host")
	}
	return m, nil
}

func parsePolicies(s string) ([]fleet.Policy, error) {
	all := fleet.Policies()
	if strings.TrimSpace(s) == "" {
		return all, nil
	}
	want := map[string]bool{"oracle": true}
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if _, err := fleet.PolicyNamed(name); err != nil {
			return nil, fmt.Errorf("fleetsim: -policies: %w", err)
		}
		want[name] = true
	}
	var out []fleet.Policy
	for _, p := range all {
		if want[p.Name] {
			out = append(out, p)
		}
	}
	return out, nil
}
