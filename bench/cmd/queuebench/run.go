package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hostguard/hostguard/bench/queue"
)

type options struct {
	pg      string
	prefix  string
	dir     string
	runs    int
	cycle   queue.CycleOptions
	dormant queue.DormantOptions
	skip    map[string]bool
	args    []string
}

func parseFlags(args []string, log io.Writer) (options, error) {
	fs := flag.NewFlagSet("queuebench", flag.ContinueOnError)
	fs.SetOutput(log)
	o := options{args: args}
	fs.StringVar(&o.pg, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server; the benchmark drops and creates its databases on it (see -db-prefix)")
	fs.StringVar(&o.prefix, "db-prefix", "hgbench", "PostgreSQL databases are PREFIX_hg and PREFIX_river (dropped and created)")
	fs.StringVar(&o.dir, "dir", "", "directory for SQLite files (default a new temporary directory, removed after)")
	fs.IntVar(&o.runs, "runs", 3, "burn-down runs per system, alternating")
	fs.IntVar(&o.cycle.N, "n", 50_000, "items per burn-down run")
	fs.IntVar(&o.cycle.Workers, "workers", 4, "hostguard claiming goroutines")
	fs.IntVar(&o.cycle.ClaimBatch, "batch", 100, "items per hostguard claim")
	fs.IntVar(&o.cycle.RiverWorkers, "river-workers", 1_000, "River MaxWorkers")
	fs.IntVar(&o.dormant.Backlog, "backlog", 1_000_000, "dormant items in the backlog scenario")
	fs.IntVar(&o.dormant.Trickle, "trickle", 2_000, "due items trickled in")
	fs.IntVar(&o.dormant.Burst, "burst", 10_000, "backlog items reactivated at once")
	fs.BoolVar(&o.dormant.SyncSightings, "sync-sightings", false, "hostguard's sightings wait for the disk (retry.Config.SyncSightings); by default they do not on PostgreSQL")
	skip := fs.String("skip", "", "comma-separated parts to leave out: pg, sqlite, cycle, backlog")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("queuebench: unexpected argument %q", fs.Arg(0))
	}
	if o.runs < 1 || o.runs > 50 {
		return o, fmt.Errorf("queuebench: -runs %d, want 1..50", o.runs)
	}
	o.skip = map[string]bool{}
	for part := range strings.SplitSeq(*skip, ",") {
		part = strings.TrimSpace(part)
		switch part {
		case "":
		case "pg", "sqlite", "cycle", "backlog":
			o.skip[part] = true
		default:
			return o, fmt.Errorf("queuebench: -skip: unknown part %q (want pg, sqlite, cycle or backlog)", part)
		}
	}
	return o, nil
}

type system struct {
	name    string
	cycle   func(ctx context.Context, target string) (queue.Cycle, error)
	dormant func(ctx context.Context, target string) (queue.Dormant, error)
	target  func(ctx context.Context, run int) (string, error) // a fresh database
}

func run(ctx context.Context, args []string, out, log io.Writer) error {
	o, err := parseFlags(args, log)
	if err != nil {
		return err
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "queuebench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	pgTarget := func(name string) func(context.Context, int) (string, error) {
		return func(ctx context.Context, _ int) (string, error) { return queue.FreshPostgres(ctx, o.pg, name) }
	}
	fileTarget := func(name string) func(context.Context, int) (string, error) {
		return func(_ context.Context, run int) (string, error) {
			return filepath.Join(dir, fmt.Sprintf("%s-%d-%d.db", name, run, time.Now().UnixNano())), nil
		}
	}
	cyc := func(f func(context.Context, string, queue.CycleOptions) (queue.Cycle, error)) func(context.Context, string) (queue.Cycle, error) {
		return func(ctx context.Context, t string) (queue.Cycle, error) { return f(ctx, t, o.cycle) }
	}
	dor := func(f func(context.Context, string, queue.DormantOptions) (queue.Dormant, error)) func(context.Context, string) (queue.Dormant, error) {
		return func(ctx context.Context, t string) (queue.Dormant, error) { return f(ctx, t, o.dormant) }
	}
	var pairs [][2]system
	if !o.skip["pg"] {
		pairs = append(pairs, [2]system{
			{name: "hostguard, PostgreSQL", cycle: cyc(queue.HostguardCycle), dormant: dor(queue.HostguardDormant), target: pgTarget(o.prefix + "_hg")},
			{name: "River, riverpgxv5", cycle: cyc(queue.RiverPostgresCycle), dormant: dor(queue.RiverPostgresDormant), target: pgTarget(o.prefix + "_river")},
		})
	}
	if !o.skip["sqlite"] {
		pairs = append(pairs, [2]system{
			{name: "hostguard, SQLite", cycle: cyc(queue.HostguardCycle), dormant: dor(queue.HostguardDormant), target: fileTarget("hg")},
			{name: "River, riversqlite", cycle: cyc(queue.RiverSQLiteCycle), target: fileTarget("river")},
		})
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Started: %s. Machine: %d CPUs, %s %s/%s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "Command: `go run ./cmd/queuebench %s` (in bench/)\n\n", strings.Join(o.args, " "))
	if !o.skip["cycle"] {
		fmt.Fprintf(&b, "Burn-down: %d no-op items added in batches of 5 000, then worked to success. hostguard: %d workers claiming and settling %d at a time. River: MaxWorkers %d, FetchCooldown 2 ms, FetchPollInterval 20 ms (its own benchmark's tuning); done = completion event. %d alternating runs each, fresh database per run, median.\n\n",
			o.cycle.N, o.cycle.Workers, o.cycle.ClaimBatch, o.cycle.RiverWorkers, o.runs)
		b.WriteString("| system | add (items/s) | claim → succeed (cycles/s) | cycle ratio vs River on the same store |\n|---|---:|---:|---:|\n")
		for _, pair := range pairs {
			var results [2][]queue.Cycle
			for r := range o.runs {
				for i := range 2 {
					sys := pair[(r+i)%2] // alternate which system goes first
					k := (r + i) % 2
					t, err := sys.target(ctx, r)
					if err != nil {
						return err
					}
					c, err := sys.cycle(ctx, t)
					if err != nil {
						return fmt.Errorf("%s: %w", sys.name, err)
					}
					results[k] = append(results[k], c)
					fmt.Fprintf(log, "run %d %-22s add %8.0f/s work %8.0f/s\n", r+1, sys.name, c.AddRate(), c.WorkRate())
				}
			}
			riverWork := median(results[1], queue.Cycle.WorkRate)
			for k, sys := range pair {
				w := median(results[k], queue.Cycle.WorkRate)
				fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.2f |\n", sys.name, median(results[k], queue.Cycle.AddRate), w, w/riverWork)
			}
		}
		b.WriteString("\n")
	}
	if !o.skip["backlog"] {
		fmt.Fprintf(&b, "Backlog: %d items due in 30 days; then %d due items added one every 5 ms while one worker claims (hostguard twice: a worker that sleeps 5 ms after an empty claim, then one in a blocking claim, woken by LISTEN/NOTIFY on PostgreSQL and in process on SQLite; River is woken by its LISTEN/NOTIFY and polls every 20 ms); then %d backlog items reactivated at once, one call per item (hostguard Observe with ReactivateWithin 1 µs, %s, 4 callers; River JobRetry, 4 callers), and as many others in batches (hostguard ObserveMany, 1 000 per call, 1 caller; River has no batch call); 2 hostguard workers in blocking claims drain them meanwhile. Lag = from the insert call starting to a worker holding the item. %d alternating rounds, fresh database per round; each figure is the median over the rounds (of each round's p50 or p99).\n\n",
			o.dormant.Backlog, o.dormant.Trickle, o.dormant.Burst, sightingMode(o.dormant.SyncSightings), o.runs)
		b.WriteString("| system | backlog load (items/s) | claim call p50 / p99 (ms) | due → claimed, polling p50 / p99 (ms) | due → claimed, blocking claim or River p50 / p99 (ms) | reactivate one by one (items/s) | drained (s) | reactivate in batches of 1 000 (items/s) | drained (s) |\n|---|---:|---|---|---|---:|---:|---:|---:|\n")
		var notes []string
		for _, pair := range pairs {
			var results [2][]queue.Dormant
			for r := range o.runs {
				for i := range 2 {
					k := (r + i) % 2 // alternate which system goes first
					sys := pair[k]
					if sys.dormant == nil {
						continue
					}
					t, err := sys.target(ctx, r)
					if err != nil {
						return err
					}
					d, err := sys.dormant(ctx, t)
					if err != nil {
						return fmt.Errorf("%s backlog: %w", sys.name, err)
					}
					results[k] = append(results[k], d)
					fmt.Fprintf(log, "backlog round %d %-22s load %v lag p50 %v reactivate %.0f/s drain %v (load average %s)\n", r+1, sys.name,
						d.Load.Round(time.Millisecond), queue.Quantile(d.Lags, 0.5), float64(d.Burst)/d.Reactivate.Seconds(), d.Drain.Round(time.Millisecond), loadAverage())
				}
			}
			for k, sys := range pair {
				ds := results[k]
				if len(ds) == 0 {
					continue
				}
				claims := "n/a (internal)"
				if len(ds[0].Claims) > 0 {
					claims = fmt.Sprintf("%.2f / %.2f", medianQ(ds, func(d queue.Dormant) []time.Duration { return d.Claims }, 0.5), medianQ(ds, func(d queue.Dormant) []time.Duration { return d.Claims }, 0.99))
				}
				batch := "n/a (no batch call) | n/a"
				if ds[0].BatchDrain > 0 {
					batch = fmt.Sprintf("%.0f | %.2f", medianOf(ds, func(d queue.Dormant) float64 { return float64(d.Burst) / d.BatchReactivate.Seconds() }),
						medianOf(ds, func(d queue.Dormant) float64 { return d.BatchDrain.Seconds() }))
				}
				polled := "n/a"
				if len(ds[0].PollLags) > 0 {
					polled = fmt.Sprintf("%.2f / %.2f", medianQ(ds, func(d queue.Dormant) []time.Duration { return d.PollLags }, 0.5), medianQ(ds, func(d queue.Dormant) []time.Duration { return d.PollLags }, 0.99))
				}
				lags := func(d queue.Dormant) []time.Duration { return d.Lags }
				fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %.2f / %.2f | %.0f | %.2f | %s |\n", sys.name,
					medianOf(ds, func(d queue.Dormant) float64 { return float64(d.Backlog) / d.Load.Seconds() }), claims, polled,
					medianQ(ds, lags, 0.5), medianQ(ds, lags, 0.99),
					medianOf(ds, reactivateRate), medianOf(ds, func(d queue.Dormant) float64 { return d.Drain.Seconds() }), batch)
			}
			if len(results[0]) > 0 && len(results[0]) == len(results[1]) {
				// Ratios of the rounds, each against the other system's
				// run in the same round.
				var rs, ls []string
				for r := range results[0] {
					rs = append(rs, fmt.Sprintf("%.2f", reactivateRate(results[0][r])/reactivateRate(results[1][r])))
					ls = append(ls, fmt.Sprintf("%.2f", msf(queue.Quantile(results[0][r].Lags, 0.5))/msf(queue.Quantile(results[1][r].Lags, 0.5))))
				}
				notes = append(notes, fmt.Sprintf("%s against %s, round by round: reactivation one by one %s×; blocking due → claimed p50 %s× (below 1 is faster).",
					pair[0].name, pair[1].name, strings.Join(rs, ", "), strings.Join(ls, ", ")))
			}
		}
		for _, n := range notes {
			b.WriteString("\n" + n + "\n")
		}
	}
	_, err = io.WriteString(out, b.String())
	return err
}

func reactivateRate(d queue.Dormant) float64 { return float64(d.Burst) / d.Reactivate.Seconds() }

// medianOf is the median of f over ds.
func medianOf(ds []queue.Dormant, f func(queue.Dormant) float64) float64 {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = f(d)
	}
	return medianFloat(xs)
}

// medianQ is the median over ds of each run's q-quantile of f, in ms.
func medianQ(ds []queue.Dormant, f func(queue.Dormant) []time.Duration, q float64) float64 {
	return medianOf(ds, func(d queue.Dormant) float64 { return msf(queue.Quantile(f(d), q)) })
}

func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(cs []queue.Cycle, f func(queue.Cycle) float64) float64 {
	xs := make([]float64, len(cs))
	for i, c := range cs {
		xs[i] = f(c)
	}
	return medianFloat(xs)
}

func medianFloat(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0
	}
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// sightingMode says how hostguard's sightings were committed.
func sightingMode(sync bool) string {
	if sync {
		return "sightings waiting for the disk (SyncSightings)"
	}
	return "sightings not waiting for the disk (the default)"
}
