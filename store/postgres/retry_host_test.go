package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
)

func openWithChunks(t *testing.T, dsn string, head, chunk int64) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	postgres.SetRetryWakeChunks(st, head, chunk)
	return st
}

// wakeCase is one wake test's database, clock and first node: a store
// whose loop finishes no wake in the background, as if its node stopped
// after each wake's first chunk, with n items of host parked on it.
type wakeCase struct {
	dsn   string
	clock *clocktest.Clock
	cfg   retry.Config
	a     *postgres.Store
	sa    *retry.Scheduler
}

func newWakeCase(t *testing.T, host string, n int, head, chunk int64) *wakeCase {
	t.Helper()
	c := &wakeCase{dsn: storetest.PostgresDSN(t), clock: clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	c.cfg = retry.Config{Jitter: -1, WakeJitter: wakeSpread, Now: c.clock.Now}
	c.a = openWithChunks(t, c.dsn, head, chunk)
	postgres.StopRetryWakeJobs(c.a)
	var err error
	if c.sa, err = retry.New(c.a, c.cfg); err != nil {
		t.Fatal(err)
	}
	storetest.ParkItems(t, c.sa, host, n, func(i int) string { return fmt.Sprintf("%s-%04d", host, i) })
	return c
}

// wakeSpread is the wake tests' jitter.
const wakeSpread = time.Minute

// dueTimes lists every item's next due time.
func dueTimes(t *testing.T, s *retry.Scheduler) map[string]time.Time {
	t.Helper()
	due := map[string]time.Time{}
	for page := (retry.ListPage{}); ; {
		var err error
		page, err = s.List(context.Background(), retry.ListParams{After: page.Next, Limit: retry.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			due[it.ID] = it.NextAt
		}
		if page.Next == "" {
			return due
		}
	}
}

// TestRetryWakeFinishesOnAnotherNode: a wake larger than its first chunk
// moves that chunk, due in the first slice of the spread, before it
// returns; its node stops; another node's store finishes the wake, each
// later item in the rest of the spread, the event counted once and every
// item once; a second wake finds nothing.
func TestRetryWakeFinishesOnAnotherNode(t *testing.T) {
	t.Parallel()
	const n, head, chunk = 430, 50, 40
	const spread = wakeSpread
	c := newWakeCase(t, "big.example", n, head, chunk)
	dsn, a, sa, cfg := c.dsn, c.a, c.sa, c.cfg
	at := c.clock.Now()
	res, err := sa.WakeHost(context.Background(), "big.example")
	if err != nil || res.Woken != n {
		t.Fatalf("WakeHost = %+v, %v; want %d woken (the first chunk now, the rest to follow)", res, err, n)
	}
	firstEnd := at.Add(spread * head / n)
	moved := 0
	for id, due := range dueTimes(t, sa) {
		if due.After(at.Add(spread)) {
			continue
		}
		moved++
		if due.Before(at) || due.After(firstEnd) {
			t.Errorf("%s, woken before the wake returned, is due at %v; want within the first chunk's slice [%v, %v]", id, due, at, firstEnd)
		}
	}
	if moved != head {
		t.Fatalf("%d items were due within the spread when the wake returned; want the first chunk, %d", moved, head)
	}
	st, err := sa.Stats(context.Background())
	if err != nil || st.HostWakes != 1 || st.HostWoken != head {
		t.Fatalf("after the first chunk: wakes %d, woken %d (%v); want 1 and %d", st.HostWakes, st.HostWoken, err, head)
	}
	a.Close()

	b := openWithChunks(t, dsn, head, chunk) // its loop takes the job up on Open
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.WaitWakes(ctx); err != nil {
		t.Fatal(err)
	}
	sb, err := retry.New(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	due := dueTimes(t, sb)
	if len(due) != n {
		t.Fatalf("listed %d items; want %d", len(due), n)
	}
	var late int
	for id, d := range due {
		if d.Before(at) || d.After(at.Add(spread)) {
			t.Errorf("%s is due at %v; want within [%v, %v]", id, d, at, at.Add(spread))
		}
		if d.After(firstEnd) {
			late++
		}
	}
	if late != n-head {
		t.Errorf("%d items are due after the first chunk's slice; want the %d the other node moved", late, n-head)
	}
	st, err = sb.Stats(context.Background())
	if err != nil || st.HostWakes != 1 || st.HostWoken != n {
		t.Errorf("after the wake: wakes %d, woken %d (%v); want 1 and %d", st.HostWakes, st.HostWoken, err, n)
	}
	if again, err := sb.WakeHost(context.Background(), "big.example"); err != nil || again.Woken != 0 {
		t.Errorf("a second wake for the same recovery = %+v, %v; want nothing moved", again, err)
	}
}

// TestRetryWakeNewerReplacesOlder: a host's second wake while its first
// is unfinished takes its place, with its own time, and finishes both.
func TestRetryWakeNewerReplacesOlder(t *testing.T) {
	t.Parallel()
	const n, head, chunk = 300, 60, 60
	const spread = wakeSpread
	c := newWakeCase(t, "twice.example", n, head, chunk)
	dsn, a, sa, clock := c.dsn, c.a, c.sa, c.clock
	ctx := context.Background()
	if _, err := sa.WakeHost(ctx, "twice.example"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Minute)
	second := clock.Now()
	if res, err := sa.WakeHost(ctx, "twice.example"); err != nil || res.Woken != n-head {
		t.Fatalf("second WakeHost = %+v, %v; want the %d the first had left", res, err, n-head)
	}
	var jobs int
	var jobAt time.Time
	if err := a.Pool().QueryRow(ctx, `SELECT count(*), max(at) FROM retry_wake_jobs`).Scan(&jobs, &jobAt); err != nil {
		t.Fatal(err)
	}
	if jobs != 1 || !jobAt.Equal(second) {
		t.Fatalf("%d wake jobs, the newest at %v; want one, the second wake's (%v)", jobs, jobAt, second)
	}
	b := openWithChunks(t, dsn, head, chunk)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.WaitWakes(wctx); err != nil {
		t.Fatal(err)
	}
	var first, later int
	for id, d := range dueTimes(t, sa) {
		switch {
		case d.Before(second):
			first++
		case d.After(second.Add(spread)):
			t.Errorf("%s is due at %v: no wake moved it", id, d)
		default:
			later++
		}
	}
	if first != head || later != n-head {
		t.Errorf("%d items woken by the first wake and %d by the second; want %d and %d", first, later, head, n-head)
	}
}
