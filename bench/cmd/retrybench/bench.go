package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/jackc/pgx/v5"
)

type options struct {
	db       string
	n        int
	due      float64
	workers  int
	batch    int
	duration time.Duration
	observe  int
	fresh    bool
	reuse    bool
	phases   string
	profile  string
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("retrybench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.db, "db", "", "store: an SQLite file path or a postgres:// DSN (use search_path=NAME for a schema of its own)")
	fs.IntVar(&o.n, "n", 1_000_000, "items to load")
	fs.Float64Var(&o.due, "due", 0.4, "share of the loaded items due at once; the rest wait 1 to 30 days")
	fs.IntVar(&o.workers, "workers", 4, "concurrent workers in the cycle phases")
	fs.IntVar(&o.batch, "batch", 100, "items per claim in the cycle phases")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of each cycle phase")
	fs.IntVar(&o.observe, "observe", 20_000, "Observe calls to time")
	fs.BoolVar(&o.fresh, "fresh", true, "start from an empty store (deletes the SQLite file, or drops and recreates the search_path schema)")
	fs.BoolVar(&o.reuse, "reuse", false, "skip loading: measure a store an earlier run loaded with the same -n and -due (implies -fresh=false)")
	fs.StringVar(&o.phases, "phases", "idle,succeed,fail,observe,stats,disk", "phases to run, comma-separated")
	fs.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of the measured phases to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.db == "":
		return o, errors.New("-db is required")
	case o.n < 1:
		return o, fmt.Errorf("-n %d: want at least 1", o.n)
	case o.due <= 0 || o.due > 1:
		return o, fmt.Errorf("-due %v: want (0, 1]", o.due)
	case o.workers < 1 || o.workers > 256:
		return o, fmt.Errorf("-workers %d: want 1..256", o.workers)
	case o.batch < 1 || o.batch > retry.MaxClaim:
		return o, fmt.Errorf("-batch %d: want 1..%d", o.batch, retry.MaxClaim)
	case o.duration <= 0 || o.duration > time.Hour:
		return o, fmt.Errorf("-duration %v: want (0, 1h]", o.duration)
	}
	return o, nil
}

func run(ctx context.Context, args []string) error {
	o, err := parse(args, os.Stderr)
	if err != nil {
		return err
	}
	kind, target, err := hostguard.ParseDSN(o.db)
	if err != nil {
		return err
	}
	if o.fresh && !o.reuse {
		if err := reset(ctx, kind, target); err != nil {
			return err
		}
	}
	st, err := hostguard.Open(ctx, o.db)
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := retry.New(st, retry.Config{})
	if err != nil {
		return err
	}
	r := &report{engine: kind, o: o}
	if o.profile != "" {
		f, err := os.Create(o.profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	if err := r.load(ctx, s); err != nil {
		return err
	}
	phases := map[string]func() error{
		"idle":    func() error { return r.idleClaims(ctx, s) },
		"succeed": func() error { return r.cycles(ctx, s, "claim→succeed", retry.OpSucceed) },
		"fail":    func() error { return r.cycles(ctx, s, "claim→fail", retry.OpFail) },
		"observe": func() error { return r.observe(ctx, s) },
		"stats":   func() error { return r.stats(ctx, s) },
		"disk":    func() error { return r.disk(ctx, st) },
		// retention: claims timed while Prune deletes the done items the
		// earlier phases left, as the daemon's leader does.
		"retention": func() error { return r.retention(ctx, st, s) },
	}
	for _, name := range strings.Split(o.phases, ",") {
		phase, ok := phases[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("-phases: unknown phase %q (want idle, succeed, fail, observe, stats, disk, retention)", name)
		}
		if err := phase(); err != nil {
			return err
		}
	}
	r.print(os.Stdout)
	return nil
}

// reset empties the benchmark's store.
func reset(ctx context.Context, kind, target string) error {
	if kind == "sqlite" {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(target + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	}
	cfg, err := pgx.ParseConfig(target)
	if err != nil {
		return errors.New("the postgres DSN cannot be parsed")
	}
	schema := cfg.RuntimeParams["search_path"]
	if schema == "" || strings.ContainsAny(schema, `", `) {
		return errors.New("-fresh on PostgreSQL needs a single search_path=NAME in the DSN (the schema is dropped)")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	defer conn.Close(ctx)
	id := pgx.Identifier{schema}.Sanitize()
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+id+" CASCADE; CREATE SCHEMA "+id)
	return err
}

type row struct{ name, value, note string }

type report struct {
	engine string
	o      options
	rows   []row
	ids    []string // the loaded items waiting in the future, for Observe
}

func (r *report) add(name, value, note string) {
	r.rows = append(r.rows, row{name, value, note})
	fmt.Fprintf(os.Stderr, "%-32s %s  %s\n", name, value, note)
}

func itemID(i int) string { return fmt.Sprintf("%040x", uint64(i)*0x9E3779B97F4A7C15) }

func (r *report) load(ctx context.Context, s *retry.Scheduler) error {
	cpu0 := cpuTime()
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	dueN := int(float64(r.o.n) * r.o.due)
	batch := make([]retry.NewItem, 0, retry.MaxAdd)
	for i := 0; i < r.o.n; i++ {
		it := retry.NewItem{ID: itemID(i)}
		if i >= dueN {
			it.NotBefore = start.Add(24*time.Hour + time.Duration(rng.Int64N(int64(29*24*time.Hour))))
			if len(r.ids) < 200_000 {
				r.ids = append(r.ids, it.ID)
			}
		}
		if r.o.reuse {
			continue
		}
		batch = append(batch, it)
		if len(batch) == cap(batch) || i == r.o.n-1 {
			if _, err := s.Add(ctx, batch...); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if r.o.reuse {
		return nil
	}
	el := time.Since(start)
	r.add("Add (batches of 10 000)", fmt.Sprintf("%.0f items/s", float64(r.o.n)/el.Seconds()),
		fmt.Sprintf("%d items (%d due now, the rest in 1–30 days) in %v; %.1f µs CPU per item in this process",
			r.o.n, dueN, el.Round(time.Millisecond), float64((cpuTime()-cpu0).Microseconds())/float64(r.o.n)))
	return nil
}

// idleClaims times claims made one after another by a single worker.
func (r *report) idleClaims(ctx context.Context, s *retry.Scheduler) error {
	for _, n := range []int{1, r.o.batch} {
		var lat []time.Duration
		for range 500 {
			t := time.Now()
			ls, err := s.Claim(ctx, retry.ClaimParams{N: n, Lease: time.Minute, Worker: "idle"})
			lat = append(lat, time.Since(t))
			if err != nil {
				return err
			}
			if err := settle(ctx, s, ls, retry.OpSucceed); err != nil {
				return err
			}
		}
		r.add(fmt.Sprintf("Claim latency, N=%d, 1 worker", n), pcts(lat), "one claim at a time, each settled before the next")
	}
	return nil
}

func settle(ctx context.Context, s *retry.Scheduler, ls []retry.Lease, op retry.Op) error {
	if len(ls) == 0 {
		return nil
	}
	out := make([]retry.Outcome, len(ls))
	for i, l := range ls {
		out[i] = retry.Outcome{Lease: l.Ref(), Op: op}
		if op == retry.OpFail {
			out[i].Class, out[i].Note = "no_peers", "benchmark"
		}
	}
	errs, err := s.Settle(ctx, out)
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

// cpuTime is the CPU time this process has used so far. The machine is
// shared, so wall-clock rates depend on what else runs; CPU per item does
// much less.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r *report) cycles(ctx context.Context, s *retry.Scheduler, name string, op retry.Op) error {
	cpu0 := cpuTime()
	var done atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	deadline := time.Now().Add(r.o.duration)
	errs := make(chan error, r.o.workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range r.o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			defer func() { mu.Lock(); lat = append(lat, mine...); mu.Unlock() }()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t := time.Now()
				ls, err := s.Claim(ctx, retry.ClaimParams{N: r.o.batch, Lease: time.Minute, Worker: fmt.Sprint("w", w)})
				mine = append(mine, time.Since(t))
				if err != nil {
					errs <- err
					return
				}
				if len(ls) == 0 {
					errs <- errors.New("ran out of due items: raise -n or -due, or shorten -duration")
					return
				}
				if err := settle(ctx, s, ls, op); err != nil {
					errs <- err
					return
				}
				done.Add(int64(len(ls)))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	cpu := cpuTime() - cpu0
	r.add(fmt.Sprintf("%s cycles", name), fmt.Sprintf("%.0f items/s", float64(done.Load())/el.Seconds()),
		fmt.Sprintf("%d workers, claims of %d, settled in one batch each; %d items in %v; this process used %.0f µs CPU per item",
			r.o.workers, r.o.batch, done.Load(), el.Round(time.Millisecond), float64(cpu.Microseconds())/float64(max(done.Load(), 1))))
	r.add(fmt.Sprintf("Claim latency during %s", name), pcts(lat), fmt.Sprintf("N=%d, %d workers at once", r.o.batch, r.o.workers))
	return nil
}

func (r *report) observe(ctx context.Context, s *retry.Scheduler) error {
	if r.o.observe == 0 || len(r.ids) == 0 {
		return nil
	}
	var next atomic.Int64
	var lat []time.Duration
	var mu sync.Mutex
	errs := make(chan error, r.o.workers)
	start := time.Now()
	var wg sync.WaitGroup
	for range r.o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			defer func() { mu.Lock(); lat = append(lat, mine...); mu.Unlock() }()
			for {
				i := int(next.Add(1)) - 1
				if i >= r.o.observe || ctx.Err() != nil {
					return
				}
				t := time.Now()
				if _, err := s.Observe(ctx, r.ids[i*7919%len(r.ids)], retry.ObserveParams{}); err != nil {
					errs <- err
					return
				}
				mine = append(mine, time.Since(t))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	r.add("Observe", fmt.Sprintf("%.0f calls/s", float64(r.o.observe)/el.Seconds()),
		fmt.Sprintf("%d calls, %d workers, one item each; latency %s", r.o.observe, r.o.workers, pcts(lat)))
	return r.observeMany(ctx, s)
}

// observeMany times batches of 100 sightings, the way a crawler reports
// what it saw.
func (r *report) observeMany(ctx context.Context, s *retry.Scheduler) error {
	const batch = 100
	var next atomic.Int64
	total := r.o.observe * 5
	errs := make(chan error, r.o.workers)
	start := time.Now()
	var wg sync.WaitGroup
	for range r.o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]string, batch)
			for {
				i := int(next.Add(batch)) - batch
				if i >= total || ctx.Err() != nil {
					return
				}
				for k := range ids {
					ids[k] = r.ids[(i+k)*7919%len(r.ids)]
				}
				if _, err := s.ObserveMany(ctx, ids, retry.ObserveParams{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("observe many: %w", err)
	}
	r.add("ObserveMany", fmt.Sprintf("%.0f ids/s", float64(total)/el.Seconds()),
		fmt.Sprintf("%d ids in calls of %d, %d workers", total, batch, r.o.workers))
	return nil
}

func (r *report) stats(ctx context.Context, s *retry.Scheduler) error {
	var lat []time.Duration
	var st retry.Stats
	for range 5 {
		t := time.Now()
		var err error
		if st, err = s.Stats(ctx); err != nil {
			return err
		}
		lat = append(lat, time.Since(t))
	}
	r.add("Stats", pcts(lat), fmt.Sprintf("5 calls over %d items (%v)", st.Total, st.ByState))
	return nil
}

func (r *report) disk(ctx context.Context, st hostguard.Store) error {
	sched, err := retry.New(st.(retry.Store), retry.Config{})
	if err != nil {
		return err
	}
	stats, err := sched.Stats(ctx)
	if err != nil {
		return err
	}
	var bytes int64
	var what string
	switch db := st.(type) {
	case *sqlite.Store:
		// Everything in the file is ours at this point; the WAL is
		// checkpointed on close, so count it too.
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(db.Path() + suffix); err == nil {
				bytes += fi.Size()
			}
		}
		what = filepath.Base(db.Path()) + " and its WAL"
	case *postgres.Store:
		if err := db.Pool().QueryRow(ctx, `SELECT pg_total_relation_size('retry_items')`).Scan(&bytes); err != nil {
			return err
		}
		what = "pg_total_relation_size(retry_items), heap and indexes, before VACUUM"
	}
	r.add("Bytes on disk per item", fmt.Sprintf("%.0f B", float64(bytes)/float64(max(stats.Total, 1))),
		fmt.Sprintf("%d MB for %d items: %s", bytes>>20, stats.Total, what))
	return nil
}

func pcts(lat []time.Duration) string {
	if len(lat) == 0 {
		return "-"
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(int(q*float64(len(lat))), len(lat)-1)] }
	return fmt.Sprintf("p50 %v, p99 %v", p(0.5).Round(time.Microsecond), p(0.99).Round(time.Microsecond))
}

func (r *report) print(w io.Writer) {
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(w, "\n%s, %d items, %d workers, claims of %d; load average at the end: %s\n", r.engine, r.o.n, r.o.workers, r.o.batch, strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
	fmt.Fprintln(w, "| measure | result | notes |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, x := range r.rows {
		fmt.Fprintf(w, "| %s | %s | %s |\n", x.name, x.value, x.note)
	}
}
