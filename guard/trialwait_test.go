package guard_test

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// TestTrialWaitRules drives one guard per table in a synctest bubble, so
// that a caller's wait on a trial ends exactly when the table says. The
// default endpoint needs 2s to answer (seenUp), so a caller may wait
// 4 × 2s and a quarter more, 10s, for a trial's outcome, unless TrialWait
// is lower. Probes are off unless a table turns them on.
func TestTrialWaitRules(t *testing.T) {
	t.Parallel()
	noProbes := guard.Config{MaxProbes: -1, TrialWait: time.Minute}
	probes := guard.Config{TrialWait: time.Minute}
	// half is the default endpoint half-open at 30s with its trial, t, out
	// and a caller, w, waiting on it.
	half := rows(seenUp, trip, []step{
		{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
		{at: 30 * s, do: "acquire-bg", tk: "w"},
		{at: 31 * s, do: "got", tk: "w", want: "waiting"},
	})
	// halfCtx is half with w waiting through AcquireContext.
	halfCtx := rows(seenUp, trip, []step{
		{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
		{at: 30 * s, do: "acquire-bg", tk: "w", want: "ctx"},
		{at: 31 * s, do: "got", tk: "w", want: "waiting"},
	})
	tables := map[string]struct {
		cfg  guard.Config
		rows []step
	}{
		"a caller that finds the trial out goes out once it answers": {cfg: noProbes, rows: rows(half, []step{
			{at: 31 * s, do: "answer", tk: "t"},
			{at: 31 * s, do: "got", tk: "w", want: "ok"},
			{at: 31 * s, do: "state", want: "closed"},
			{at: 31 * s, do: "answer", tk: "w"},
			{at: 31 * s, do: "waits", want: "1 0 0"},
		})},
		"a caller waiting on a trial that fails is refused by the opening that follows": {cfg: noProbes, rows: rows(half, []step{
			{at: 32 * s, do: "fail", tk: "t"},
			{at: 32 * s, do: "got", tk: "w", want: "open 30s"},
			{at: 32 * s, do: "state", want: "open"},
			{at: 32 * s, do: "waits", want: "0 1 0"},
		})},
		"a trial released without a report hands the slot to the waiting caller": {cfg: noProbes, rows: rows(half, []step{
			{at: 32 * s, do: "release", tk: "t"},
			{at: 32 * s, do: "got", tk: "w", want: "trial"},
			{at: 32 * s, do: "acquire-bg", tk: "y"},
			{at: 42*s - 1, do: "got", tk: "y", want: "waiting"},
			{at: 42 * s, do: "got", tk: "y", want: "open 0s"},
		})},
		"the wait is what the endpoint needs to answer": {cfg: noProbes, rows: rows(half, []step{
			{at: 40*s - 1, do: "got", tk: "w", want: "waiting"},
			{at: 40 * s, do: "got", tk: "w", want: "open 0s"},
			{at: 40 * s, do: "waits", want: "0 1 0"},
		})},
		"the wait is at most TrialWait": {cfg: guard.Config{MaxProbes: -1, TrialWait: 3 * s}, rows: rows(half[:len(half)-1], []step{
			{at: 33*s - 1, do: "got", tk: "w", want: "waiting"},
			{at: 33 * s, do: "got", tk: "w", want: "open 0s"},
		})},
		// w and x wait; t ends without a report, one of them takes the
		// slot, and the other waits on for that trial's outcome.
		"a caller waits on through a trial that ended without a report, for the next one": {cfg: noProbes, rows: rows(half, []step{
			{at: 31 * s, do: "acquire-bg", tk: "x"},
			{at: 32 * s, do: "release", tk: "t"},
			{at: 32 * s, do: "trials", want: "1"},
			{at: 32 * s, do: "trial-of", tk: "n"},
			{at: 33 * s, do: "answer", tk: "n"},
			{at: 33 * s, do: "got", tk: "w", want: "trial|ok"},
			{at: 33 * s, do: "got", tk: "x", want: "trial|ok"},
			{at: 33 * s, do: "trials", want: "1"},
		})},
		"... and is refused by the opening when that one fails": {cfg: noProbes, rows: rows(half, []step{
			{at: 31 * s, do: "acquire-bg", tk: "x"},
			{at: 32 * s, do: "release", tk: "t"},
			{at: 32 * s, do: "trial-of", tk: "n"},
			{at: 33 * s, do: "fail", tk: "n"},
			{at: 33 * s, do: "got", tk: "w", want: "trial|open 30s"},
			{at: 33 * s, do: "got", tk: "x", want: "trial|open 30s"},
		})},
		"a caller's one wait ends when it runs out, whatever the trials": {cfg: noProbes, rows: rows(half, []step{
			{at: 31 * s, do: "acquire-bg", tk: "x"},
			{at: 32 * s, do: "release", tk: "t"},
			{at: 32 * s, do: "trial-of", tk: "n"},
			{at: 41 * s, do: "got", tk: "w", want: "trial|open 0s"},
			{at: 41 * s, do: "got", tk: "x", want: "trial|open 0s"},
		})},
		"without TrialWait, the seed's rule: refused at once": {cfg: guard.Config{MaxProbes: -1}, rows: rows(seenUp, trip, []step{
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 30 * s, do: "acquire-bg", tk: "w"},
			{at: 30 * s, do: "got", tk: "w", want: "open 0s"},
			{at: 30 * s, do: "waits", want: "0 0 0"},
		})},
		"an endpoint never seen answering: refused at once": {cfg: noProbes, rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 30 * s, do: "acquire-bg", tk: "w"},
			{at: 30 * s, do: "got", tk: "w", want: "open 0s"},
		})},
		// lateTrip opens the endpoint at 40s until 70s, and its check
		// waits 10s.
		"a caller during a check waits for it, and goes out on its answer": {cfg: probes, rows: rows(seenUp, lateTrip, []step{
			{at: 40 * s, do: "probes", want: "1"},
			{at: 41 * s, do: "acquire-bg", tk: "w"},
			{at: 42 * s, do: "got", tk: "w", want: "waiting"},
			{at: 42 * s, do: "probe", want: "answer"},
			{at: 42 * s, do: "got", tk: "w", want: "ok"},
			{at: 42 * s, do: "waits", want: "1 0 0"},
		})},
		"a caller waits through a check that hung into the fresh one, and is refused by the period when its wait ends": {cfg: probes, rows: rows(seenUp, lateTrip, []step{
			{at: 41 * s, do: "acquire-bg", tk: "w"},
			{at: 50 * s, do: "probes", want: "2"},
			{at: 51*s - 1, do: "got", tk: "w", want: "waiting"},
			{at: 51 * s, do: "got", tk: "w", want: "open 19s"},
			{at: 51 * s, do: "waits", want: "0 1 0"},
			{at: 70 * s, do: "probes", want: "3"},
		})},
		"a caller that gives up during a check is demand for the period's probe": {cfg: probes, rows: rows(seenUp, lateTrip, []step{
			{at: 41 * s, do: "acquire-bg", tk: "w", want: "ctx"},
			{at: 42 * s, do: "cancel", tk: "w"},
			{at: 42 * s, do: "got", tk: "w", want: "gave-up"},
			{at: 43 * s, do: "probe", want: "refused"},
			{at: 70*s - 1, do: "probes", want: "1"},
			{at: 70 * s, do: "probes", want: "2"},
		})},
		"a caller during a check that fails is refused by the period": {cfg: probes, rows: rows(seenUp, lateTrip, []step{
			{at: 41 * s, do: "acquire-bg", tk: "w"},
			{at: 42 * s, do: "probe", want: "refused"},
			{at: 42 * s, do: "got", tk: "w", want: "open 28s"},
			{at: 43 * s, do: "acquire", want: "open 27s"},
		})},
		"the callers after a period with demand wait for its probe": {cfg: probes, rows: rows(seenUp, trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "probes", want: "1"},
			{at: 30 * s, do: "acquire-bg", tk: "w"},
			{at: 31 * s, do: "got", tk: "w", want: "waiting"},
			{at: 31 * s, do: "probe", want: "answer"},
			{at: 31 * s, do: "got", tk: "w", want: "ok"},
		})},
		// The timer finds the guard switched off, so the first caller
		// after it is switched on starts the probe itself.
		"a caller that starts the probe waits for its outcome": {cfg: probes, rows: rows(seenUp, trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 29 * s, do: "disable"},
			{at: 30 * s, do: "probes", want: "0"},
			{at: 31 * s, do: "enable"},
			{at: 31 * s, do: "acquire-bg", tk: "w"},
			{at: 31 * s, do: "probes", want: "1"},
			{at: 32 * s, do: "got", tk: "w", want: "waiting"},
			{at: 32 * s, do: "probe", want: "answer"},
			{at: 32 * s, do: "got", tk: "w", want: "ok"},
			{at: 32 * s, do: "waits", want: "1 0 0"},
		})},
		"a caller whose wait ran out is demand for the next period": {cfg: probes, rows: rows(half, []step{
			{at: 40 * s, do: "got", tk: "w", want: "open 0s"},
			{at: 41 * s, do: "fail", tk: "t"},
			{at: 71*s - 1, do: "probes", want: "0"},
			{at: 71 * s, do: "probes", want: "1"},
		})},
		"a caller whose context ends while it waits gives up, and the trial goes on": {cfg: noProbes, rows: rows(halfCtx, []step{
			{at: 32 * s, do: "cancel", tk: "w"},
			{at: 32 * s, do: "got", tk: "w", want: "gave-up"},
			{at: 32 * s, do: "waits", want: "0 0 1"},
			{at: 32 * s, do: "state", want: "half-open"},
			{at: 33 * s, do: "answer", tk: "t"},
			{at: 33 * s, do: "state", want: "closed"},
		})},
		"a caller that gave up is demand for the next period": {cfg: probes, rows: rows(halfCtx, []step{
			{at: 32 * s, do: "cancel", tk: "w"},
			{at: 32 * s, do: "got", tk: "w", want: "gave-up"},
			{at: 33 * s, do: "fail", tk: "t"},
			{at: 63*s - 1, do: "probes", want: "0"},
			{at: 63 * s, do: "probes", want: "1"},
		})},
		// The endpoint needs 2s: a caller with 5s left waits 3s, so that
		// an admission at the end of the wait still leaves it the 2s.
		"a context's deadline cuts the wait to leave what the endpoint needs": {cfg: noProbes, rows: rows(seenUp, trip, []step{
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 30 * s, do: "acquire-bg", tk: "w", want: "5s"},
			{at: 33*s - 1, do: "got", tk: "w", want: "waiting"},
			{at: 33 * s, do: "got", tk: "w", want: "open 0s"},
			{at: 33 * s, do: "waits", want: "0 1 0"},
		})},
		"... and a trial that answers within it admits the caller": {cfg: noProbes, rows: rows(seenUp, trip, []step{
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 30 * s, do: "acquire-bg", tk: "w", want: "5s"},
			{at: 32 * s, do: "answer", tk: "t"},
			{at: 32 * s, do: "got", tk: "w", want: "ok"},
		})},
		"a context with no more time left than the endpoint needs is refused at once": {cfg: noProbes, rows: rows(seenUp, trip, []step{
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 30 * s, do: "acquire-bg", tk: "w", want: "2s"},
			{at: 30 * s, do: "got", tk: "w", want: "open 0s"},
			{at: 30 * s, do: "waits", want: "0 0 0"},
		})},
		"a caller refused by the failure it waited on is demand for the next period": {cfg: probes, rows: rows(half, []step{
			{at: 32 * s, do: "fail", tk: "t"},
			{at: 32 * s, do: "got", tk: "w", want: "open 30s"},
			{at: 62*s - 1, do: "probes", want: "0"},
			{at: 62 * s, do: "probes", want: "1"},
		})},
	}
	for name, tc := range tables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setupProbes(t, tc.cfg, false)
				defer b.shutdown()
				b.run(tc.rows)
			})
		})
	}
}

// TestHalfOpenRaceWithTrialWait is TestHalfOpenRace with callers that
// wait on the trial: 64 goroutines race for the slot, the winner settles
// its trial at once, and still exactly one request goes out before it
// settles. After an answer every loser goes out; after a failure every
// loser is refused by the new opening.
func TestHalfOpenRaceWithTrialWait(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{Threshold: 1, TrialWait: time.Minute})
	const racers, rounds = 64, 20
	for round := range rounds {
		halfOpenRound(t, b, round, time.Second) // a caller may wait 5s on the trial
		answer := round%2 == 0

		start := make(chan struct{})
		var mu sync.Mutex
		trials, admitted, refused := 0, 0, 0
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				<-start
				tk, err := b.g.Acquire(defaultURL)
				var oe *guard.OpenError
				switch {
				case err == nil && tk.Trial():
					mu.Lock()
					trials++
					if admitted > 0 {
						t.Errorf("round %d: a trial was admitted after another request", round)
					}
					mu.Unlock()
					if answer {
						tk.Answered()
					} else {
						tk.Failed(errRefused)
					}
				case err == nil:
					mu.Lock()
					admitted++
					mu.Unlock()
					tk.Answered()
				case errors.As(err, &oe) && oe.RetryAfter == 30*s:
					mu.Lock()
					refused++
					mu.Unlock()
				default:
					t.Errorf("round %d: a loser got %v", round, err)
				}
				tk.Release()
			})
		}
		close(start)
		wg.Wait()
		if trials != 1 {
			t.Fatalf("round %d: %d trials, want exactly 1", round, trials)
		}
		if answer && admitted != racers-1 || !answer && refused != racers-1 {
			t.Fatalf("round %d (answer %v): %d admitted, %d refused by the new opening; want all %d losers %s",
				round, answer, admitted, refused, racers-1, map[bool]string{true: "admitted", false: "refused"}[answer])
		}
	}
}
