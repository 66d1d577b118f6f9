package queue

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // River's SQLite driver takes a database/sql pool
)

// noopArgs is the benchmark's job: it does nothing.
type noopArgs struct {
	Seq     int  `json:"seq"`
	Backlog bool `json:"backlog,omitempty"`
}

func (noopArgs) Kind() string { return "hgbench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	onWork func(*river.Job[noopArgs])
}

func (w *noopWorker) Work(_ context.Context, job *river.Job[noopArgs]) error {
	if w.onWork != nil {
		w.onWork(job)
	}
	return nil
}

// riverConfig is River tuned the way its own benchmark tunes it for
// throughput (short fetch cooldown and poll interval), with maxWorkers
// goroutines on the default queue.
func riverConfig(maxWorkers int, onWork func(*river.Job[noopArgs])) *river.Config {
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{onWork: onWork})
	return &river.Config{
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers:           workers,
	}
}

func migrateRiver[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("queue: river migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("queue: river migrate: %w", err)
	}
	return nil
}

// RiverPostgresCycle is the burn-down on River with riverpgxv5, on the
// empty database at dsn.
func RiverPostgresCycle(ctx context.Context, dsn string, o CycleOptions) (Cycle, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return Cycle{}, fmt.Errorf("queue: river pool: %w", err)
	}
	defer pool.Close()
	return riverCycle(ctx, riverpgxv5.New(pool), "river", o)
}

// openRiverSQLite opens path with the same pragmas hostguard's SQLite store
// uses, and one connection, as River's SQLite driver asks.
func openRiverSQLite(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, fmt.Errorf("queue: open river sqlite: %w", err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// RiverSQLiteCycle is the burn-down on River with riversqlite, on a new
// SQLite file at path.
func RiverSQLiteCycle(ctx context.Context, path string, o CycleOptions) (Cycle, error) {
	db, err := openRiverSQLite(path)
	if err != nil {
		return Cycle{}, err
	}
	defer db.Close()
	return riverCycle(ctx, riversqlite.New(db), "river", o)
}

func riverCycle[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], system string, o CycleOptions) (Cycle, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return Cycle{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Limit)
	defer cancel()
	if err := migrateRiver(ctx, driver); err != nil {
		return Cycle{}, err
	}
	client, err := river.NewClient(driver, riverConfig(o.RiverWorkers, nil))
	if err != nil {
		return Cycle{}, fmt.Errorf("queue: river client: %w", err)
	}
	// Completion events, not the worker's return, mark a job done: they
	// come after River's completer has recorded the success.
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: o.N + 1_000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer unsubscribe()

	c := Cycle{System: system, N: o.N}
	params := make([]river.InsertManyParams, 0, o.AddBatch)
	t0 := time.Now()
	for i := 0; i < o.N; i += o.AddBatch {
		params = params[:0]
		for j := i; j < min(i+o.AddBatch, o.N); j++ {
			params = append(params, river.InsertManyParams{Args: noopArgs{Seq: j}})
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return c, fmt.Errorf("queue: river insert: %w", err)
		}
	}
	c.Add = time.Since(t0)

	t0 = time.Now()
	if err := client.Start(ctx); err != nil {
		return c, fmt.Errorf("queue: river start: %w", err)
	}
	defer func() { _ = client.Stop(context.Background()) }()
	for done := 0; done < o.N; {
		select {
		case ev := <-events:
			if ev == nil {
				return c, fmt.Errorf("queue: river closed its event stream after %d jobs", done)
			}
			if ev.Kind != river.EventKindJobCompleted {
				return c, fmt.Errorf("queue: river job %d ended as %s", ev.Job.ID, ev.Kind)
			}
			done++
		case <-ctx.Done():
			return c, fmt.Errorf("queue: river worked %d of %d jobs: %w", done, o.N, ctx.Err())
		}
	}
	c.Work = time.Since(t0)
	return c, nil
}

// RiverPostgresDormant is the backlog scenario on River with riverpgxv5:
// the backlog is scheduled a month ahead, the trickle is inserted due, and
// the burst is JobRetry on backlog jobs (River's way of making a scheduled
// job available now). River hands jobs to its own workers, so there is no
// claim call to time; Claims stays empty.
func RiverPostgresDormant(ctx context.Context, dsn string, o DormantOptions) (Dormant, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return Dormant{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Limit)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return Dormant{}, fmt.Errorf("queue: river pool: %w", err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	if err := migrateRiver(ctx, driver); err != nil {
		return Dormant{}, err
	}

	added := make([]atomic.Int64, o.Trickle)
	var mu sync.Mutex
	var lags []time.Duration
	var trickled, burst atomic.Int64
	onWork := func(job *river.Job[noopArgs]) {
		if job.Args.Backlog {
			burst.Add(1)
			return
		}
		lag := time.Since(time.Unix(0, added[job.Args.Seq].Load()))
		mu.Lock()
		lags = append(lags, lag)
		mu.Unlock()
		trickled.Add(1)
	}
	client, err := river.NewClient(driver, riverConfig(100, onWork))
	if err != nil {
		return Dormant{}, fmt.Errorf("queue: river client: %w", err)
	}

	d := Dormant{System: "river", Backlog: o.Backlog, Burst: o.Burst}
	later := time.Now().Add(30 * 24 * time.Hour)
	params := make([]river.InsertManyParams, 0, 5_000)
	t0 := time.Now()
	for i := 0; i < o.Backlog; i += cap(params) {
		params = params[:0]
		for j := i; j < min(i+cap(params), o.Backlog); j++ {
			params = append(params, river.InsertManyParams{Args: noopArgs{Seq: j, Backlog: true}, InsertOpts: &river.InsertOpts{ScheduledAt: later}})
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return d, fmt.Errorf("queue: river backlog insert: %w", err)
		}
	}
	d.Load = time.Since(t0)

	if err := client.Start(ctx); err != nil {
		return d, fmt.Errorf("queue: river start: %w", err)
	}
	defer func() { _ = client.Stop(context.Background()) }()

	tick := time.NewTicker(max(o.Every, time.Microsecond))
	defer tick.Stop()
	for i := range o.Trickle {
		added[i].Store(time.Now().UnixNano())
		if _, err := client.Insert(ctx, noopArgs{Seq: i}, nil); err != nil {
			return d, fmt.Errorf("queue: river trickle insert: %w", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return d, ctx.Err()
		}
	}
	if err := waitFor(ctx, &trickled, int64(o.Trickle), o.Poll); err != nil {
		return d, fmt.Errorf("queue: river trickle: %w", err)
	}
	mu.Lock()
	d.Lags = lags
	mu.Unlock()

	// A fresh database numbers the backlog 1..Backlog in insert order.
	step := o.Backlog / o.Burst
	var next atomic.Int64
	errs := make([]error, 4)
	var wg sync.WaitGroup
	t0 = time.Now()
	for w := range errs {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= o.Burst {
					return
				}
				if _, err := client.JobRetry(ctx, int64(1+i*step)); err != nil {
					errs[w] = fmt.Errorf("queue: river JobRetry: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	d.Reactivate = time.Since(t0)
	for _, err := range errs {
		if err != nil {
			return d, err
		}
	}
	if err := waitFor(ctx, &burst, int64(o.Burst), o.Poll); err != nil {
		return d, fmt.Errorf("queue: river burst: %w", err)
	}
	d.Drain = time.Since(t0)
	return d, nil
}

// waitFor polls until n reaches want.
func waitFor(ctx context.Context, n *atomic.Int64, want int64, every time.Duration) error {
	for n.Load() < want {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d done: %w", n.Load(), want, ctx.Err())
		case <-time.After(every):
		}
	}
	return nil
}
