// Command sightcost measures what one-call reactivations cost on
// PostgreSQL, beyond their rate: the server's CPU time, this process's CPU
// time, the WAL written, the WAL flushes and the commits, each per
// reactivated item. It loads a backlog due in a month into a fresh
// database, then reactivates items spread over it with Observe from
// several callers while workers in blocking claims drain them, as
// queuebench's burst does.
//
//	go run ./cmd/sightcost -rounds 3
//
// Server CPU is read from /proc for every process named postgres, so the
// server must run on this machine and nothing else should use it. To
// compare two builds, build this command at each commit and run the two
// binaries in turn.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/bench/queue"
	"github.com/hostguard/hostguard/retry"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type options struct {
	server, db                       string
	backlog, burst, callers, workers int
	rounds                           int
	sync                             bool
}

func main() {
	var o options
	flag.StringVar(&o.server, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server; the database named by -db is dropped and created on it")
	flag.StringVar(&o.db, "db", "hgsightcost", "database to create for each round")
	flag.IntVar(&o.backlog, "backlog", 200_000, "items due in a month")
	flag.IntVar(&o.burst, "burst", 4_000, "items reactivated, one Observe each")
	flag.IntVar(&o.callers, "callers", 4, "goroutines calling Observe")
	flag.IntVar(&o.workers, "workers", 2, "goroutines in blocking claims draining what is reactivated (0: none)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds, each on a fresh database")
	flag.BoolVar(&o.sync, "sync-sightings", false, "sightings wait for the disk (retry.Config.SyncSightings)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if o.backlog < 1 || o.burst < 1 || o.burst > o.backlog || o.callers < 1 || o.workers < 0 || o.rounds < 1 {
		fmt.Fprintln(os.Stderr, "sightcost: want backlog ≥ burst ≥ 1, callers ≥ 1, workers ≥ 0, rounds ≥ 1")
		os.Exit(2)
	}
	fmt.Printf("| round | items/s | server CPU per item | client CPU per item | WAL per item | WAL flushes per item | commits per item | claims | load average |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var rates []float64
	for r := range o.rounds {
		m, err := round(ctx, o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sightcost:", err)
			os.Exit(1)
		}
		rates = append(rates, m.rate)
		fmt.Printf("| %d | %.0f | %v | %v | %d B | %.2f | %.2f | %d | %s |\n", r+1, m.rate,
			m.serverCPU.Round(time.Microsecond), m.clientCPU.Round(time.Microsecond), m.wal, m.flushes, m.commits, m.claims, loadAverage())
	}
	slices.Sort(rates)
	fmt.Printf("\nMedian: %.0f items/s (%d callers, %d draining workers, %d of %d items).\n", rates[len(rates)/2], o.callers, o.workers, o.burst, o.backlog)
}

type measures struct {
	rate                 float64
	serverCPU, clientCPU time.Duration
	wal                  int64
	flushes, commits     float64
	claims               int64
}

func round(ctx context.Context, o options) (measures, error) {
	admin, err := pgx.Connect(ctx, o.server)
	if err != nil {
		return measures{}, err
	}
	defer admin.Close(context.Background())
	db := pgx.Identifier{o.db}.Sanitize()
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
		return measures{}, err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		return measures{}, err
	}
	u, err := url.Parse(o.server)
	if err != nil {
		return measures{}, fmt.Errorf("-pg: %w", err)
	}
	u.Path = "/" + o.db
	dsn := u.String()
	st, err := hostguard.Open(ctx, dsn)
	if err != nil {
		return measures{}, err
	}
	defer st.Close()
	// Reactivated items are due at once, as in queuebench.
	s, err := retry.New(st, retry.Config{ReactivateWithin: time.Microsecond, SyncSightings: o.sync})
	if err != nil {
		return measures{}, err
	}
	later := time.Now().Add(30 * 24 * time.Hour)
	items := make([]retry.NewItem, 0, retry.MaxAdd)
	for i := 0; i < o.backlog; i += retry.MaxAdd {
		items = items[:0]
		for j := i; j < min(i+retry.MaxAdd, o.backlog); j++ {
			items = append(items, retry.NewItem{ID: itemID(j), NotBefore: later})
		}
		if _, err := s.Add(ctx, items...); err != nil {
			return measures{}, err
		}
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return measures{}, err
	}
	defer pool.Close()
	type counters struct {
		wal, flushes, commits int64
		server, client        time.Duration
	}
	read := func() (c counters, err error) {
		// Cumulative statistics reach the views only when each backend
		// reports them, about once a second.
		if _, err := pool.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			return c, err
		}
		err = pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn() - '0/0', (SELECT wal_sync FROM pg_stat_wal),
			(SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())`).Scan(&c.wal, &c.flushes, &c.commits)
		c.server, c.client = procCPU("postgres"), procCPU("")
		return c, err
	}

	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	var drained, claims atomic.Int64
	workErr := make(chan error, o.workers)
	var workWG sync.WaitGroup
	for range o.workers {
		workWG.Go(func() {
			// Each batch's successes go with the next claim, one
			// transaction for both.
			bw := queue.NewBatchWorker(s, 100)
			for wctx.Err() == nil {
				n, _, err := bw.Next(wctx, time.Second)
				if err != nil {
					if wctx.Err() == nil {
						workErr <- err
					}
					return
				}
				claims.Add(1)
				drained.Add(int64(n))
			}
		})
	}
	before, err := read()
	if err != nil {
		return measures{}, err
	}
	step := o.backlog / o.burst
	var next atomic.Int64
	errs := make([]error, o.callers)
	var callWG sync.WaitGroup
	t0 := time.Now()
	for c := range o.callers {
		callWG.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= o.burst {
					return
				}
				if _, err := s.Observe(ctx, itemID(i*step), retry.ObserveParams{}); err != nil {
					errs[c] = err
					return
				}
			}
		})
	}
	callWG.Wait()
	took := time.Since(t0)
	for _, err := range errs {
		if err != nil {
			return measures{}, err
		}
	}
	for o.workers > 0 && drained.Load() < int64(o.burst) {
		select {
		case err := <-workErr:
			return measures{}, err
		case <-time.After(time.Millisecond):
		}
	}
	stopWorkers()
	workWG.Wait()
	time.Sleep(1100 * time.Millisecond) // the statistics' reporting interval
	after, err := read()
	if err != nil {
		return measures{}, err
	}
	n := float64(o.burst)
	return measures{
		rate:      n / took.Seconds(),
		serverCPU: (after.server - before.server) / time.Duration(o.burst),
		clientCPU: (after.client - before.client) / time.Duration(o.burst),
		wal:       (after.wal - before.wal) / int64(o.burst),
		flushes:   float64(after.flushes-before.flushes) / n,
		// Less the statistics queries of read itself.
		commits: float64(after.commits-before.commits-2) / n,
		claims:  claims.Load(),
	}, nil
}

func itemID(i int) string { return fmt.Sprintf("dormant-%08d", i) }

// procCPU is the user and system time of every process named name, or of
// this process when name is empty, from /proc.
func procCPU(name string) time.Duration {
	self := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	var ticks int64
	for _, e := range ents {
		if name == "" && e.Name() != self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st := string(b)
		open, end := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
		if open < 0 || end < open || (name != "" && st[open+1:end] != name) {
			continue
		}
		f := strings.Fields(st[end+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + k
	}
	// The kernel counts in USER_HZ, 100 a second on Linux.
	return time.Duration(ticks) * 10 * time.Millisecond
}

func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}
