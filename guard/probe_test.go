package guard_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/clocktest"
)

// trip is the two failures that open the default endpoint at time 0.
var trip = []step{
	{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
	{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
	{do: "state", want: "open"},
}

// seenUp is an answer in 2s from the default endpoint: its need is known.
var seenUp = []step{{do: "acquire", tk: "up"}, {do: "answer-after", tk: "up", want: "2s"}}

// lateTrip opens the default endpoint at 40s on two timeouts reported
// 10s after their requests were sent.
var lateTrip = []step{
	{at: 20 * s, do: "acquire", tk: "a"}, {at: 30 * s, do: "fail", tk: "a", want: "timeout-after-10s"},
	{at: 30 * s, do: "acquire", tk: "b"}, {at: 40 * s, do: "fail", tk: "b", want: "timeout-after-10s"},
}

func rows(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestProbeRules drives one guard with a fake Probe per table, in a
// synctest bubble so that the probe timer fires exactly at the end of the
// open period (default configuration: Threshold 2, OpenFor 30s).
func TestProbeRules(t *testing.T) {
	t.Parallel()
	tables := map[string]struct {
		cfg      guard.Config
		stubborn bool
		rows     []step
	}{
		"no probe without demand": {rows: rows(trip, []step{
			{at: 30 * s, do: "probes", want: "0"},
			{at: 45 * s, do: "probes", want: "0"},
			{at: 45 * s, do: "state", want: "half-open"},
			{at: 45 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 45 * s, do: "acquire", want: "open 0s"},
			{at: 46 * s, do: "answer", tk: "t"},
			{at: 46 * s, do: "state", want: "closed"},
			{at: 46 * s, do: "probes", want: "0"},
		})},
		// Without demand the first caller after the period is the trial
		// (the half-open rule), even for an endpoint seen answering: no
		// probe starts and the caller is not refused.
		"without demand the first caller is the trial, even once the endpoint's need is known": {rows: rows([]step{
			{do: "acquire", tk: "up"}, {do: "answer-after", tk: "up", want: "2s"},
		}, trip, []step{
			{at: 45 * s, do: "probes", want: "0"},
			{at: 45 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 45 * s, do: "probes", want: "0"},
		})},
		"a refusal during the open period starts a probe when it ends": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30*s - 1, do: "probes", want: "0"},
			{at: 30*s - 1, do: "state", want: "open"},
			{at: 30 * s, do: "probes", want: "1"},
			{at: 30 * s, do: "state", want: "half-open"},
		})},
		"requests fail fast while a probe runs": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "acquire", want: "open 0s"},
			{at: 31 * s, do: "acquire", want: "open 0s"},
			{at: 24 * time.Hour, do: "acquire", want: "open 0s"},
			{at: 24 * time.Hour, do: "probes", want: "1"},
		})},
		"a probe waits what the endpoint needs, not a whole timeout": {rows: rows([]step{
			// The host answered in 2s: a give-up after more than 8s
			// counts (WaitFactor 4), so the probe waits 10s.
			{do: "acquire", tk: "up"}, {do: "answer-after", tk: "up", want: "2s"},
		}, trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "probes", want: "1"},
			{at: 40*s - 1, do: "state", want: "half-open"},
			{at: 40*s - 1, do: "cancelled", want: "false"},
			{at: 40 * s, do: "state", want: "open"},
			{at: 40 * s, do: "acquire", want: "open 30s"},
		})},
		"a probe of an endpoint never seen answering waits as long as Probe does": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "probes", want: "1"},
			{at: 10 * time.Minute, do: "state", want: "half-open"},
			{at: 10 * time.Minute, do: "cancelled", want: "false"},
			{at: 10 * time.Minute, do: "probe", want: "timeout"},
			{at: 10 * time.Minute, do: "state", want: "open"},
		})},
		"the probe's wait has the floor under it": {cfg: guard.Config{WaitFloor: 5 * s}, rows: rows([]step{
			{do: "acquire", tk: "up"}, {do: "answer-after", tk: "up", want: "10ms"},
		}, trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 36*s + 250*time.Millisecond - 1, do: "state", want: "half-open"},
			{at: 36*s + 250*time.Millisecond, do: "state", want: "open"},
		})},
		"an answered probe notes what the endpoint needed": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 33 * s, do: "probe", want: "answer"},
			{at: 33 * s, do: "state", want: "closed"},
		}, []step{
			{at: 40 * s, do: "acquire", tk: "c"}, {at: 40 * s, do: "fail", tk: "c"},
			{at: 41 * s, do: "acquire", tk: "d"}, {at: 41 * s, do: "fail", tk: "d"},
			{at: 45 * s, do: "acquire", want: "open 26s"},
			// 3s needed: the next probe waits 1.25 × 4 × 3s = 15s.
			{at: 71 * s, do: "probes", want: "2"},
			{at: 86*s - 1, do: "state", want: "half-open"},
			{at: 86 * s, do: "state", want: "open"},
		})},
		"a probe that answers closes the endpoint": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 31 * s, do: "probe", want: "answer"},
			{at: 31 * s, do: "state", want: "closed"},
			{at: 31 * s, do: "acquire", want: "ok"},
			// Closed again: one failure is not enough to trip.
			{at: 32 * s, do: "acquire", tk: "c"}, {at: 32 * s, do: "fail", tk: "c"},
			{at: 32 * s, do: "state", want: "closed"},
		})},
		"a probe that fails re-opens, and probes again only on new demand": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 31 * s, do: "probe", want: "timeout"},
			{at: 31 * s, do: "state", want: "open"},
			{at: 31 * s, do: "acquire", want: "open 30s"},
			{at: 61 * s, do: "probes", want: "2"},
			{at: 62 * s, do: "probe", want: "refused"},
			{at: 62 * s, do: "state", want: "open"},
			// Nobody asks during this period: no probe, and the next
			// Acquire is the trial.
			{at: 200 * s, do: "probes", want: "2"},
			{at: 200 * s, do: "acquire", tk: "t", want: "trial"},
		})},
		"a refusal while a probe runs is demand for the next period": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "acquire", want: "open 0s"},
			{at: 31 * s, do: "probe", want: "timeout"},
			{at: 31 * s, do: "state", want: "open"},
			// Nobody asks during this period, but someone did while the
			// probe ran: the guard probes again when it ends.
			{at: 61 * s, do: "probes", want: "2"},
			{at: 61 * s, do: "acquire", want: "open 0s"},
		})},
		"a refusal while a caller's trial runs is demand for the next period": {rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 30 * s, do: "acquire", want: "open 0s"},
			{at: 31 * s, do: "fail", tk: "t"},
			{at: 61 * s, do: "probes", want: "1"},
		})},
		"an inconclusive probe hands the trial to the next request": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 31 * s, do: "probe", want: "peer-reset"},
			{at: 31 * s, do: "state", want: "half-open"},
			{at: 31 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 31 * s, do: "acquire", want: "open 0s"},
			{at: 32 * s, do: "fail", tk: "t"},
			{at: 32 * s, do: "state", want: "open"},
			{at: 32 * s, do: "probes", want: "1"},
		})},
		"a cancelled or refused-by-policy probe is inconclusive too": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 31 * s, do: "probe", want: "policy"},
			{at: 31 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 31 * s, do: "release", tk: "t"},
			{at: 31 * s, do: "acquire", tk: "t2", want: "trial"},
		})},
		"a reset during a probe wins": {stubborn: true, rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "probes", want: "1"},
			{at: 31 * s, do: "reset"},
			{at: 31 * s, do: "cancelled", want: "true"},
			{at: 31 * s, do: "state", want: "closed"},
			{at: 32 * s, do: "acquire", tk: "c"}, {at: 32 * s, do: "fail", tk: "c"},
			// The probe from before the reset fails late: it reports
			// into nothing, so one counted failure is still one.
			{at: 33 * s, do: "probe", want: "timeout"},
			{at: 33 * s, do: "state", want: "closed"},
			{at: 34 * s, do: "acquire", tk: "d"}, {at: 34 * s, do: "fail", tk: "d"},
			{at: 34 * s, do: "state", want: "open"},
		})},
		"a probe from before a reset cannot free a newer trial's slot": {stubborn: true, rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 31 * s, do: "reset"},
			{at: 32 * s, do: "acquire", tk: "c"}, {at: 32 * s, do: "fail", tk: "c"},
			{at: 32 * s, do: "acquire", tk: "d"}, {at: 32 * s, do: "fail", tk: "d"},
			{at: 62 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 63 * s, do: "probe", want: "canceled"},
			{at: 63 * s, do: "acquire", want: "open 0s"},
			{at: 63 * s, do: "probes", want: "1"},
		})},
		"a reset before the timer fires stops it": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 20 * s, do: "reset"},
			{at: 100 * s, do: "probes", want: "0"},
			{at: 100 * s, do: "acquire", want: "ok"},
		})},
		"an answer from elsewhere during a probe closes and cancels it": {rows: rows([]step{
			{do: "exempt", tk: "e"},
		}, trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "probes", want: "1"},
			{at: 31 * s, do: "answer", tk: "e"},
			{at: 31 * s, do: "state", want: "closed"},
			{at: 31 * s, do: "acquire", want: "ok"},
		})},
		"exempt tickets pass while a probe runs and their failures do not count": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "exempt", tk: "e", want: "ok"},
			{at: 30 * s, do: "fail", tk: "e", want: "timeout"},
			{at: 30 * s, do: "acquire", want: "open 0s"},
			{at: 31 * s, do: "probe", want: "answer"},
			{at: 31 * s, do: "state", want: "closed"},
		})},
		"a late sibling cannot re-open the endpoint while a probe runs": {rows: []step{
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "acquire", tk: "late"},
			{do: "fail", tk: "b"},
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 31 * s, do: "fail", tk: "late", want: "timeout"},
			{at: 31 * s, do: "acquire", want: "open 0s"},
			{at: 32 * s, do: "probe", want: "answer"},
			{at: 32 * s, do: "state", want: "closed"},
		}},
		"the timer does not probe while the guard is disabled": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 20 * s, do: "disable"},
			{at: 40 * s, do: "probes", want: "0"},
			{at: 40 * s, do: "acquire", want: "ok"},
			{at: 41 * s, do: "enable"},
			// The demand seen before is still there: the first Acquire
			// starts the probe and is refused.
			{at: 41 * s, do: "acquire", want: "open 0s"},
			{at: 41 * s, do: "probes", want: "1"},
			{at: 42 * s, do: "probe", want: "answer"},
			{at: 42 * s, do: "state", want: "closed"},
		})},
		"a negative MaxProbes means no probes": {cfg: guard.Config{MaxProbes: -1}, rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 31 * s, do: "probes", want: "0"},
			{at: 31 * s, do: "acquire", want: "trial"},
		})},
		"at MaxProbes the next request is the trial": {cfg: guard.Config{MaxProbes: 1}, rows: rows(trip, []step{
			{at: 5 * s, do: "acquire", url: "http://b.test/", tk: "x"}, {at: 5 * s, do: "fail", tk: "x"},
			{at: 5 * s, do: "acquire", url: "http://b.test/", tk: "y"}, {at: 5 * s, do: "fail", tk: "y"},
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 10 * s, do: "acquire", url: "http://b.test/", want: "open 25s"},
			{at: 30 * s, do: "probes", want: "1"},
			{at: 36 * s, do: "probes", want: "1"},
			{at: 36 * s, do: "acquire", url: "http://b.test/", tk: "bt", want: "trial"},
			// Once a's probe is done, b's next period can be probed.
			{at: 37 * s, do: "probe", want: "answer"},
			{at: 38 * s, do: "fail", tk: "bt"},
			{at: 40 * s, do: "acquire", url: "http://b.test/", want: "open 28s"},
			{at: 68 * s, do: "probes", want: "2"},
		})},
		"timeouts that trip an endpoint seen answering start a check, whose answer closes it": {rows: rows(seenUp, lateTrip, []step{
			{at: 40 * s, do: "probes", want: "1"},
			{at: 40 * s, do: "state", want: "open"},
			{at: 40 * s, do: "acquire", want: "open 30s"},
			{at: 41 * s, do: "probe", want: "answer"},
			{at: 41 * s, do: "state", want: "closed"},
			{at: 41 * s, do: "acquire", want: "ok"},
		})},
		"a check that fails leaves the opening as it was": {rows: rows(seenUp, lateTrip, []step{
			{at: 40 * s, do: "acquire", want: "open 30s"},
			{at: 45 * s, do: "probe", want: "timeout"},
			{at: 45 * s, do: "state", want: "open"},
			{at: 45 * s, do: "acquire", want: "open 25s"},
			// The demand before and during the check is served at the
			// period's end by the usual probe.
			{at: 70*s - 1, do: "probes", want: "1"},
			{at: 70 * s, do: "probes", want: "2"},
			{at: 71 * s, do: "probe", want: "timeout"},
			// That probe was the period's trial: it re-opens, longer.
			{at: 71 * s, do: "acquire", want: "open 30s"},
			{at: 200 * s, do: "probes", want: "3"},
		})},
		"a check waits what the endpoint needs": {rows: rows(seenUp, lateTrip, []step{
			// 2s needed: a wait of 1.25 × 4 × 2s = 10s.
			{at: 50*s - 1, do: "cancelled", want: "false"},
			{at: 50*s - 1, do: "probes", want: "1"},
			{at: 50 * s, do: "state", want: "open"},
			{at: 50 * s, do: "acquire", want: "open 20s"},
			// The check hung: one fresh check follows, with the same wait.
			{at: 50 * s, do: "probes", want: "2"},
			{at: 60*s - 1, do: "cancelled", want: "false"},
			{at: 60 * s, do: "state", want: "open"},
			{at: 69 * s, do: "probes", want: "2"},
			{at: 70 * s, do: "probes", want: "3"},
		})},
		"a check that hung is followed by a fresh one, whose answer closes the endpoint": {rows: rows(seenUp, lateTrip, []step{
			{at: 50 * s, do: "probes", want: "2"},
			{at: 51 * s, do: "probe", want: "answer"},
			{at: 51 * s, do: "state", want: "closed"},
			{at: 51 * s, do: "acquire", want: "ok"},
		})},
		"a check that fails at once is not checked again": {rows: rows(seenUp, lateTrip, []step{
			{at: 41 * s, do: "probe", want: "refused"},
			{at: 41 * s, do: "state", want: "open"},
			{at: 69 * s, do: "probes", want: "1"},
		})},
		"a check runs once per trip, not for the failed probe's re-opening": {rows: rows(seenUp, lateTrip, []step{
			{at: 40 * s, do: "acquire", want: "open 30s"},
			{at: 41 * s, do: "probe", want: "timeout"},
			{at: 70 * s, do: "probes", want: "2"},
			{at: 71 * s, do: "probe", want: "timeout-after-1s"},
			{at: 71 * s, do: "state", want: "open"},
			{at: 72 * s, do: "probes", want: "2"},
		})},
		"timeouts of an endpoint never seen answering start no check": {rows: rows(lateTrip, []step{
			{at: 40 * s, do: "state", want: "open"},
			{at: 40 * s, do: "probes", want: "0"},
		})},
		"refusals start no check: they are news of the moment they are reported": {rows: rows(seenUp, trip, []step{
			{do: "probes", want: "0"},
			{at: 29 * s, do: "probes", want: "0"},
		})},
		"a reset during a check wins": {stubborn: true, rows: rows(seenUp, lateTrip, []step{
			{at: 41 * s, do: "reset"},
			{at: 41 * s, do: "cancelled", want: "true"},
			{at: 41 * s, do: "state", want: "closed"},
			{at: 42 * s, do: "probe", want: "timeout"},
			{at: 42 * s, do: "state", want: "closed"},
		})},
		"at MaxProbes a trip starts no check": {cfg: guard.Config{MaxProbes: -1}, rows: rows(seenUp, lateTrip, []step{
			{at: 40 * s, do: "probes", want: "0"},
			{at: 40 * s, do: "state", want: "open"},
		})},
		"close cancels the running probe and stops the others' timers": {rows: rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 15 * s, do: "acquire", url: "http://b.test/", tk: "x"}, {at: 15 * s, do: "fail", tk: "x"},
			{at: 15 * s, do: "acquire", url: "http://b.test/", tk: "y"}, {at: 15 * s, do: "fail", tk: "y"},
			{at: 20 * s, do: "acquire", url: "http://b.test/", tk: "z", want: "open 25s"},
			{at: 30 * s, do: "probes", want: "1"},
			{at: 30 * s, do: "close"},
			{at: 30 * s, do: "state", want: "half-open"},
			// After Close the guard works as without probes.
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 100 * s, do: "probes", want: "1"},
			{at: 100 * s, do: "acquire", url: "http://b.test/", want: "trial"},
		})},
	}
	for name, tc := range tables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setupProbes(t, tc.cfg, tc.stubborn)
				defer b.shutdown()
				b.run(tc.rows)
			})
		})
	}
}

func TestProbeTransitions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupProbes(t, guard.Config{}, false)
		defer b.shutdown()
		b.run(rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 31 * s, do: "probe", want: "timeout"},
			{at: 40 * s, do: "acquire", want: "open 21s"},
			{at: 62 * s, do: "probe", want: "answer"},
		}))
		want := "closed->open, open->half-open, half-open->open, open->half-open, half-open->closed"
		if got := transitionsOf(b.log()); got != want {
			t.Errorf("transitions:\n got %s\nwant %s", got, want)
		}
	})
}

func TestProbeStatus(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupProbes(t, guard.Config{}, false)
		defer b.shutdown()
		b.run(rows(trip, []step{{at: 10 * s, do: "acquire", want: "open 20s"}, {at: 30 * s, do: "probes", want: "1"}}))
		st := b.g.Endpoints()[0]
		if !st.Probing || !st.TrialOut || st.TicketsOut != 1 || st.State != guard.HalfOpen {
			t.Errorf("status while probing: %+v", st)
		}
		b.run([]step{{at: 31 * s, do: "probe", want: "answer"}})
		if st := b.g.Endpoints()[0]; st.Probing || st.TrialOut || st.TicketsOut != 0 {
			t.Errorf("status after the probe: %+v", st)
		}
	})
}

// TestProbeEndpointIsTheKey checks that Probe receives the endpoint key,
// with no path, query or userinfo of the URLs that were asked for.
func TestProbeEndpointIsTheKey(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupProbes(t, guard.Config{}, false)
		defer b.shutdown()
		u := "https://user:pw@Feeds.Example:8443/rss?apikey=secret"
		b.run([]step{
			{do: "acquire", url: u, tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", url: u, tk: "b"}, {do: "fail", tk: "b"},
			{at: s, do: "acquire", url: u, want: "open 29s"},
			{at: 30 * s, do: "probes", want: "1"},
		})
		if got := b.oldestProbe("").endpoint; got != "https://feeds.example:8443" {
			t.Errorf("Probe got endpoint %q", got)
		}
	})
}

// TestProbeRace lets 64 goroutines hammer an endpoint whose probe is
// running: none may get through, and every refusal says the trial is out.
func TestProbeRace(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(epoch)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	g := guard.New(guard.Config{
		Threshold: 1,
		Now:       clk.Now,
		Disabled:  func() bool { return false },
		Probe: func(ctx context.Context, _ string) error {
			started <- struct{}{}
			<-release
			return nil
		},
	})
	defer g.Close()
	tk, _ := g.Acquire(defaultURL)
	tk.Failed(errTimeout)
	if _, err := g.Acquire(defaultURL); !errors.Is(err, guard.ErrOpen) {
		t.Fatalf("open endpoint admitted a request: %v", err)
	}
	clk.Advance(guard.DefaultOpenFor)
	if _, err := g.Acquire(defaultURL); !errors.Is(err, guard.ErrOpen) {
		t.Fatalf("the Acquire that starts the probe got %v", err)
	}
	<-started

	const racers, calls = 64, 200
	var through sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	start := make(chan struct{})
	for range racers {
		through.Go(func() {
			<-start
			for range calls {
				tk, err := g.Acquire(defaultURL)
				var oe *guard.OpenError
				switch {
				case err == nil:
					mu.Lock()
					admitted++
					mu.Unlock()
					tk.Release()
				case !errors.As(err, &oe) || oe.RetryAfter != 0:
					t.Errorf("got %v; want an *OpenError with RetryAfter 0", err)
				}
			}
		})
	}
	close(start)
	through.Wait()
	if admitted != 0 {
		t.Fatalf("%d requests got through while the probe ran", admitted)
	}
	close(release)
	g.Close()
	if st := g.State(defaultURL); st != guard.Closed {
		t.Errorf("after the probe answered: %s", st)
	}
}

// TestCloseWaitsForProbes runs on real timers: one endpoint's probe only
// returns when its context is cancelled, another endpoint's timer is
// armed an hour away. Close must cancel the one and stop the other, and
// return only once the probe has returned; TestMain's goleak check sees
// whether anything is left after.
func TestCloseWaitsForProbes(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(epoch)
	returned := make(chan struct{})
	started := make(chan string, 2)
	g := guard.New(guard.Config{
		Threshold: 1,
		OpenFor:   time.Hour,
		Now:       clk.Now,
		Disabled:  func() bool { return false },
		Probe: func(ctx context.Context, endpoint string) error {
			started <- endpoint
			<-ctx.Done()
			close(returned)
			return ctx.Err()
		},
	})
	defer g.Close()
	tk, _ := g.Acquire("http://a.test/")
	tk.Failed(errTimeout)
	if _, err := g.Acquire("http://a.test/"); !errors.Is(err, guard.ErrOpen) {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	tk, _ = g.Acquire("http://b.test/")
	tk.Failed(errTimeout)
	for _, u := range []string{"http://a.test/", "http://b.test/"} {
		if _, err := g.Acquire(u); !errors.Is(err, guard.ErrOpen) {
			t.Fatalf("%s: %v", u, err)
		}
	}
	if ep := <-started; ep != "http://a.test" {
		t.Fatalf("probe of %s", ep)
	}
	g.Close()
	select {
	case <-returned:
	default:
		t.Fatal("Close returned before the probe did")
	}
	if st := g.Endpoints(); st[0].Probing || st[0].TicketsOut != 0 || st[1].Probing {
		t.Errorf("after Close: %+v", st)
	}
}
