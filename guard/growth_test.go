package guard_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// TestGrowth drives open periods that grow with OpenFor 30s and
// MaxOpenFor 2m: the n-th opening in a row lasts min(n × 30s, 2m), plus a
// spread of up to 10 % from the second on.
func TestGrowth(t *testing.T) {
	t.Parallel()
	grow := guard.Config{MaxOpenFor: 2 * time.Minute}
	m := time.Minute
	tables := map[string]struct {
		cfg  guard.Config
		rows []step
	}{
		"each failed trial lengthens the next period, up to the cap": {cfg: grow, rows: rows(trip, []step{
			{do: "acquire", want: "open 30s"},
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 31 * s, do: "fail", tk: "t1"},
			{at: 31 * s, do: "acquire", want: "open 60s..66s"},
			{at: 31*s + 59*s, do: "acquire", want: "open 1s..7s"},
			{at: 100 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 100 * s, do: "fail", tk: "t2"},
			{at: 100 * s, do: "acquire", want: "open 90s..99s"},
			{at: 200 * s, do: "acquire", tk: "t3", want: "trial"},
			{at: 200 * s, do: "fail", tk: "t3"},
			{at: 200 * s, do: "acquire", want: "open 120s..132s"},
			{at: 400 * s, do: "acquire", tk: "t4", want: "trial"},
			{at: 400 * s, do: "fail", tk: "t4"},
			{at: 400 * s, do: "acquire", want: "open 120s..132s"},
			{at: 600 * s, do: "acquire", tk: "t5", want: "trial"},
			{at: 600 * s, do: "fail", tk: "t5", want: "nxdomain"},
			{at: 600 * s, do: "acquire", want: "open 120s..132s"},
		})},
		"an answer starts again at OpenFor": {cfg: grow, rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 30 * s, do: "fail", tk: "t1"},
			{at: 100 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 100 * s, do: "answer", tk: "t2"},
			{at: 101 * s, do: "acquire", tk: "c"}, {at: 101 * s, do: "fail", tk: "c"},
			{at: 101 * s, do: "acquire", tk: "d"}, {at: 101 * s, do: "fail", tk: "d"},
			{at: 101 * s, do: "acquire", want: "open 30s"},
		})},
		"an exempt answer during an open period starts again at OpenFor": {cfg: grow, rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 30 * s, do: "fail", tk: "t1"},
			{at: 40 * s, do: "exempt", tk: "e"}, {at: 40 * s, do: "answer", tk: "e"},
			{at: 41 * s, do: "acquire", tk: "c"}, {at: 41 * s, do: "fail", tk: "c"},
			{at: 41 * s, do: "acquire", tk: "d"}, {at: 41 * s, do: "fail", tk: "d"},
			{at: 41 * s, do: "acquire", want: "open 30s"},
		})},
		"a reset starts again at OpenFor": {cfg: grow, rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 30 * s, do: "fail", tk: "t1"},
			{at: 40 * s, do: "reset"},
			{at: 41 * s, do: "acquire", tk: "c"}, {at: 41 * s, do: "fail", tk: "c"},
			{at: 41 * s, do: "acquire", tk: "d"}, {at: 41 * s, do: "fail", tk: "d"},
			{at: 41 * s, do: "acquire", want: "open 30s"},
		})},
		"an inconclusive trial does not count as an opening": {cfg: grow, rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 30 * s, do: "fail", tk: "t1", want: "canceled"},
			{at: 30 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 30 * s, do: "release", tk: "t2"},
			{at: 31 * s, do: "acquire", tk: "t3", want: "trial"},
			{at: 31 * s, do: "fail", tk: "t3", want: "timeout"},
			{at: 31 * s, do: "acquire", want: "open 60s..66s"},
		})},
		"no growth by default": {rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 30 * s, do: "fail", tk: "t1"},
			{at: 30 * s, do: "acquire", want: "open 30s"},
			{at: 60 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 60 * s, do: "fail", tk: "t2"},
			{at: 60 * s, do: "acquire", want: "open 30s"},
		})},
		"no growth when MaxOpenFor is not above OpenFor": {cfg: guard.Config{MaxOpenFor: 30 * s}, rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 30 * s, do: "fail", tk: "t1"},
			{at: 30 * s, do: "acquire", want: "open 30s"},
		})},
		"no growth when MaxOpenFor is negative": {cfg: guard.Config{MaxOpenFor: -m}, rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 30 * s, do: "fail", tk: "t1"},
			{at: 30 * s, do: "acquire", want: "open 30s"},
		})},
		"a cap between two multiples is reached exactly": {cfg: guard.Config{OpenFor: 20 * s, MaxOpenFor: 50 * s}, rows: rows(trip, []step{
			{at: 20 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 20 * s, do: "fail", tk: "t1"},
			{at: 20 * s, do: "acquire", want: "open 40s..44s"},
			{at: 100 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 100 * s, do: "fail", tk: "t2"},
			{at: 100 * s, do: "acquire", want: "open 50s..55s"},
		})},
	}
	for name, tc := range tables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			setup(t, tc.cfg).run(tc.rows)
		})
	}
}

// TestGrowthWithProbes: a probe that fails grows the next period like any
// trial, and one that answers starts again at OpenFor.
func TestGrowthWithProbes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupProbes(t, guard.Config{MaxOpenFor: 90 * s}, false)
		defer b.shutdown()
		b.run(rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "probe", want: "timeout"},
			{at: 30 * s, do: "acquire", want: "open 60s..66s"},
			{at: 97 * s, do: "probes", want: "2"},
			{at: 97 * s, do: "probe", want: "refused"},
			{at: 97 * s, do: "acquire", want: "open 90s..99s"},
			{at: 200 * s, do: "probes", want: "3"},
			{at: 200 * s, do: "probe", want: "timeout"},
			{at: 200 * s, do: "acquire", want: "open 90s..99s"},
			{at: 300 * s, do: "probe", want: "answer"},
			{at: 300 * s, do: "state", want: "closed"},
			{at: 301 * s, do: "acquire", tk: "c"}, {at: 301 * s, do: "fail", tk: "c"},
			{at: 301 * s, do: "acquire", tk: "d"}, {at: 301 * s, do: "fail", tk: "d"},
			{at: 301 * s, do: "acquire", want: "open 30s"},
		}))
		if st := b.g.Endpoints()[0]; st.Openings != 1 {
			t.Errorf("Openings = %d after one opening", st.Openings)
		}
	})
}

// TestGrowthSpreadsEndpoints opens many endpoints at one instant, fails
// their trials at one instant, and checks that their second periods lie
// within the spread and apart from each other, while the first ones do
// not spread at all.
func TestGrowthSpreadsEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{Threshold: 1, MaxOpenFor: 10 * time.Minute})
	const n = 200
	url := func(i int) string { return fmt.Sprintf("http://host%d.test:8080/", i) }
	first := map[time.Duration]int{}
	second := map[time.Duration]int{}
	for i := range n {
		tk, _ := b.g.Acquire(url(i))
		tk.Failed(errTimeout)
	}
	for _, st := range b.g.Endpoints() {
		first[st.RetryAfter]++
	}
	b.clk.Advance(guard.DefaultOpenFor)
	for i := range n {
		tk, err := b.g.Acquire(url(i))
		if err != nil || !tk.Trial() {
			t.Fatalf("%d: %v", i, err)
		}
		tk.Failed(errTimeout)
	}
	for _, st := range b.g.Endpoints() {
		d := st.RetryAfter
		if d < 60*s || d > 66*s {
			t.Fatalf("%s: second period %v outside 60s..66s", st.Endpoint, d)
		}
		second[d]++
	}
	if len(first) != 1 {
		t.Errorf("first periods spread: %v", first)
	}
	if len(second) < n*9/10 {
		t.Errorf("only %d distinct second periods among %d endpoints", len(second), n)
	}
}
