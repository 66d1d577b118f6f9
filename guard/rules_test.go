package guard_test

import (
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
)

const s = time.Second

// TestRules drives one guard per table with the default configuration
// (Threshold 2, Window 120s, OpenFor 30s) through the rules of DESIGN.md.
func TestRules(t *testing.T) {
	t.Parallel()
	tables := map[string][]step{
		"two failures within the window trip": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "state", want: "closed"},
			{at: 120 * s, do: "acquire", tk: "b"}, {at: 120 * s, do: "fail", tk: "b", want: "timeout"},
			{at: 120 * s, do: "state", want: "open"},
			{at: 120 * s, do: "acquire", tk: "c", want: "open 30s"},
		},
		"a gap just over the window restarts the streak at one": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{at: 120*s + 1, do: "acquire", tk: "b"}, {at: 120*s + 1, do: "fail", tk: "b"},
			{at: 120*s + 1, do: "state", want: "closed"},
			{at: 240*s + 1, do: "acquire", tk: "c"}, {at: 240*s + 1, do: "fail", tk: "c", want: "nxdomain"},
			{at: 240*s + 1, do: "state", want: "open"},
		},
		"open fails fast with the time left, then half-open admits one trial": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{at: 10 * s, do: "acquire", tk: "b"}, {at: 10 * s, do: "fail", tk: "b"},
			{at: 20 * s, do: "acquire", want: "open 20s"},
			// RetryAfter is rounded up to a whole millisecond.
			{at: 40*s - 1, do: "acquire", want: "open 1ms"},
			{at: 40*s - 1, do: "state", want: "open"},
			{at: 40 * s, do: "state", want: "half-open"},
			{at: 40 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 40 * s, do: "acquire", want: "open 0s"},
			{at: 41 * s, do: "acquire", want: "open 0s"},
			{at: 41 * s, do: "state", want: "half-open"},
		},
		"the trial slot has no deadline": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 24 * time.Hour, do: "acquire", want: "open 0s"},
			{at: 24 * time.Hour, do: "answer", tk: "t"},
			{at: 24 * time.Hour, do: "state", want: "closed"},
			{at: 24 * time.Hour, do: "acquire", want: "ok"},
		},
		"a failed trial re-opens at once": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 50 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 55 * s, do: "fail", tk: "t", want: "timeout"},
			{at: 55 * s, do: "state", want: "open"},
			{at: 55 * s, do: "acquire", want: "open 30s"},
			{at: 85 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 86 * s, do: "answer", tk: "t2"},
			{at: 86 * s, do: "state", want: "closed"},
			// Closed again: one failure is not enough to trip.
			{at: 87 * s, do: "acquire", tk: "c"}, {at: 87 * s, do: "fail", tk: "c"},
			{at: 87 * s, do: "state", want: "closed"},
		},
		"any answer clears the streak": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{at: 1 * s, do: "acquire", tk: "b"}, {at: 1 * s, do: "answer", tk: "b"},
			{at: 2 * s, do: "acquire", tk: "c"}, {at: 2 * s, do: "fail", tk: "c"},
			{at: 2 * s, do: "state", want: "closed"},
			{at: 3 * s, do: "acquire", tk: "d"}, {at: 3 * s, do: "fail", tk: "d"},
			{at: 3 * s, do: "state", want: "open"},
		},
		"a sibling's answer clears an open endpoint": {
			{do: "acquire", tk: "slow"},
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{do: "state", want: "open"},
			{at: 5 * s, do: "answer", tk: "slow"},
			{at: 5 * s, do: "state", want: "closed"},
			{at: 5 * s, do: "acquire", want: "ok"},
		},
		"siblings in one instant count once, in any order": {
			{do: "acquire", tk: "a"}, {do: "acquire", tk: "b"}, {do: "acquire", tk: "c"},
			{do: "fail", tk: "c"}, {do: "fail", tk: "a"}, {do: "fail", tk: "b", want: "timeout"},
			{do: "state", want: "closed"},
			{do: "acquire", tk: "d"}, {do: "fail", tk: "d"},
			{do: "state", want: "open"},
		},
		"the boundary is the last admission when a failure counts": {
			{do: "acquire", tk: "a"}, {do: "acquire", tk: "b"},
			{do: "fail", tk: "a"}, // counts; b was already admitted
			{do: "acquire", tk: "c"},
			{do: "fail", tk: "b"}, // sibling of a: discarded
			{do: "state", want: "closed"},
			{do: "fail", tk: "c"}, // admitted after a counted: counts
			{do: "state", want: "open"},
		},
		"a late sibling does not start a new open period": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "acquire", tk: "late"},
			{do: "fail", tk: "b"},
			{do: "state", want: "open"},
			{at: 30 * s, do: "fail", tk: "late", want: "timeout"},
			{at: 30 * s, do: "state", want: "half-open"},
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
		},
		"a late sibling does not re-open during the trial": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "acquire", tk: "late"},
			{do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 31 * s, do: "fail", tk: "late"},
			{at: 31 * s, do: "acquire", want: "open 0s"},
			{at: 32 * s, do: "answer", tk: "t"},
			{at: 32 * s, do: "state", want: "closed"},
		},
		// A timeout is reported a whole wait after its request was sent,
		// so requests sent while the host hung time out after it came
		// back. After an answer, the sibling rule lets one of them
		// count, a streak of one, and no more: they cannot re-open the
		// host (a sharing guard, which keeps answer times, drops that
		// one too; see TestSharingRules).
		"timeouts of requests sent before a recovery cannot re-open it": {
			{do: "acquire", tk: "a1"}, {do: "acquire", tk: "a2"},
			{at: 10 * s, do: "acquire", tk: "b1"}, {at: 10 * s, do: "acquire", tk: "b2"},
			{at: 30 * s, do: "fail", tk: "a1", want: "timeout-after-30s"},
			{at: 30 * s, do: "fail", tk: "a2", want: "timeout-after-30s"},
			{at: 31 * s, do: "acquire", tk: "c1"}, {at: 31 * s, do: "acquire", tk: "c2"},
			// The host is back: a request sent now is answered.
			{at: 35 * s, do: "acquire", tk: "up"}, {at: 35 * s, do: "answer", tk: "up"},
			{at: 40 * s, do: "fail", tk: "b1", want: "timeout-after-30s"},
			{at: 40 * s, do: "fail", tk: "b2", want: "timeout-after-30s"},
			{at: 61 * s, do: "fail", tk: "c1", want: "timeout-after-30s"},
			{at: 61 * s, do: "fail", tk: "c2", want: "timeout-after-30s"},
			{at: 61 * s, do: "state", want: "closed"},
			{at: 61 * s, do: "acquire", want: "ok"},
		},
		"a trial sent before a recovery that fails after an answer does not re-open": {
			{do: "acquire", tk: "s1"},
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			// A request from before the trip is answered: the host is back.
			{at: 40 * s, do: "answer", tk: "s1"},
			{at: 40 * s, do: "state", want: "closed"},
			{at: 60 * s, do: "fail", tk: "t", want: "timeout-after-30s"},
			{at: 60 * s, do: "state", want: "closed"},
			{at: 60 * s, do: "acquire", want: "ok"},
		},
		"reset discards failures from before it": {
			{do: "acquire", tk: "a"}, {do: "acquire", tk: "b"},
			{do: "reset"},
			{do: "fail", tk: "a"},
			{do: "acquire", tk: "c"}, {do: "fail", tk: "c"},
			{do: "state", want: "closed"},
			{do: "fail", tk: "b"}, // also from before the reset
			{do: "state", want: "closed"},
			{do: "acquire", tk: "d"}, {do: "fail", tk: "d"},
			{do: "state", want: "open"},
		},
		"reset closes an open endpoint and its old trial cannot re-open it": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 31 * s, do: "reset"},
			{at: 31 * s, do: "state", want: "closed"},
			{at: 32 * s, do: "fail", tk: "t"},
			{at: 32 * s, do: "state", want: "closed"},
			{at: 32 * s, do: "acquire", want: "ok"},
		},
		"a ticket from before a reset still clears with an answer": {
			{do: "acquire", tk: "old"},
			{do: "reset"},
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "answer", tk: "old"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{do: "state", want: "closed"},
		},
		"reset creates the record": {
			{do: "len", want: "0"},
			{do: "reset"},
			{do: "len", want: "1"},
			{do: "state", want: "closed"},
		},
		"inconclusive failures record nothing": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a", want: "canceled"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b", want: "peer-reset"},
			{do: "acquire", tk: "c"}, {do: "fail", tk: "c", want: "policy"},
			{do: "acquire", tk: "d"}, {do: "fail", tk: "d", want: "other"},
			{do: "acquire", tk: "e"}, {do: "release", tk: "e"},
			{do: "state", want: "closed"},
			// Nor do they move the boundary: the next two host-level
			// failures trip as if nothing happened.
			{do: "acquire", tk: "f"}, {do: "acquire", tk: "g"},
			{do: "fail", tk: "f"}, {do: "acquire", tk: "h"}, {do: "fail", tk: "h"},
			{do: "state", want: "open"},
		},
		"an inconclusive trial only frees the slot": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 31 * s, do: "fail", tk: "t1", want: "canceled"},
			{at: 31 * s, do: "state", want: "half-open"},
			{at: 31 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 32 * s, do: "fail", tk: "t2", want: "policy"},
			{at: 32 * s, do: "acquire", tk: "t3", want: "trial"},
			{at: 33 * s, do: "fail", tk: "t3", want: "peer-reset"},
			{at: 33 * s, do: "acquire", tk: "t4", want: "trial"},
		},
		"release is idempotent and frees only its own slot": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 30 * s, do: "release", tk: "t1"},
			{at: 30 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 31 * s, do: "release", tk: "t1"},
			{at: 31 * s, do: "fail", tk: "t1", want: "canceled"},
			{at: 31 * s, do: "answer", tk: "t1"},
			{at: 31 * s, do: "fail", tk: "t1", want: "timeout"},
			{at: 31 * s, do: "acquire", want: "open 0s"},
			{at: 31 * s, do: "state", want: "half-open"},
			{at: 32 * s, do: "fail", tk: "t2"},
			{at: 32 * s, do: "release", tk: "t2"},
			{at: 32 * s, do: "acquire", want: "open 30s"},
		},
		"a report after release does nothing": {
			{do: "acquire", tk: "a"}, {do: "release", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{do: "state", want: "closed"},
		},
		"a stale trial from an earlier cycle cannot free the current slot": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 31 * s, do: "fail", tk: "t1"},
			{at: 61 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 62 * s, do: "release", tk: "t1"},
			{at: 62 * s, do: "answer", tk: "t1"},
			{at: 62 * s, do: "acquire", want: "open 0s"},
		},
		"an unsettled trial from before a reset cannot free a newer trial's slot": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 31 * s, do: "reset"},
			{at: 32 * s, do: "acquire", tk: "c"}, {at: 32 * s, do: "fail", tk: "c"},
			{at: 32 * s, do: "acquire", tk: "d"}, {at: 32 * s, do: "fail", tk: "d"},
			{at: 62 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 63 * s, do: "release", tk: "t1"},
			{at: 63 * s, do: "acquire", want: "open 0s"},
			{at: 64 * s, do: "fail", tk: "t1", want: "canceled"},
			{at: 64 * s, do: "acquire", want: "open 0s"},
		},
		"an unsettled trial from before an answer cannot free a newer trial's slot": {
			{do: "acquire", tk: "slow"},
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 31 * s, do: "answer", tk: "slow"},
			{at: 32 * s, do: "acquire", tk: "c"}, {at: 32 * s, do: "fail", tk: "c"},
			{at: 32 * s, do: "acquire", tk: "d"}, {at: 32 * s, do: "fail", tk: "d"},
			{at: 62 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 63 * s, do: "release", tk: "t1"},
			{at: 63 * s, do: "acquire", want: "open 0s"},
		},
		"exempt tickets are never refused and never count": {
			{do: "exempt", tk: "e1"}, {do: "fail", tk: "e1", want: "timeout"},
			{do: "exempt", tk: "e2"}, {do: "fail", tk: "e2", want: "refused"},
			{do: "exempt", tk: "e3"}, {do: "fail", tk: "e3", want: "nxdomain"},
			{do: "state", want: "closed"},
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{do: "exempt", tk: "e4", want: "ok"},
			{do: "fail", tk: "e4"},
			{at: 30 * s, do: "exempt", tk: "e5", want: "ok"},
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 30 * s, do: "exempt", tk: "e6", want: "ok"},
			{at: 31 * s, do: "fail", tk: "e5", want: "timeout"},
			{at: 31 * s, do: "acquire", want: "open 0s"},
		},
		"an exempt answer clears an open endpoint": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 5 * s, do: "exempt", tk: "e"},
			{at: 6 * s, do: "answer", tk: "e"},
			{at: 6 * s, do: "state", want: "closed"},
			{at: 6 * s, do: "acquire", want: "ok"},
		},
		"the kill switch lets everything through and records nothing": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{do: "disable"},
			{do: "acquire", tk: "x", want: "ok"},
			{do: "fail", tk: "x"},
			{do: "acquire", url: "http://other.test/", tk: "o1"}, {do: "fail", tk: "o1"},
			{do: "acquire", url: "http://other.test/", tk: "o2"}, {do: "fail", tk: "o2"},
			{do: "len", want: "1"},
			{do: "enable"},
			{do: "acquire", want: "open 30s"},
			{do: "state", url: "http://other.test/", want: "closed"},
		},
		"failures of enabled tickets settled while disabled are not recorded": {
			{do: "acquire", tk: "a"}, {do: "acquire", tk: "b"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "c"},
			{do: "disable"},
			{do: "fail", tk: "c"},
			{do: "enable"},
			{do: "state", want: "closed"},
		},
		"release while disabled frees the trial slot": {
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "b"}, {do: "fail", tk: "b"},
			{at: 30 * s, do: "acquire", tk: "t", want: "trial"},
			{at: 31 * s, do: "disable"},
			{at: 31 * s, do: "release", tk: "t"},
			{at: 32 * s, do: "enable"},
			{at: 32 * s, do: "acquire", tk: "t2", want: "trial"},
		},
		"a timeout of a request sent before an answered one is older news": {
			// a1 hangs on the host while it is down; a2, sent after
			// it, is answered once the host is back: a1's timeout,
			// reported later, says nothing about the host now.
			{do: "acquire", tk: "a1"},
			{at: 20 * s, do: "acquire", tk: "a2"},
			{at: 21 * s, do: "answer", tk: "a2"},
			{at: 30 * s, do: "fail", tk: "a1", want: "timeout-after-30s"},
			{at: 31 * s, do: "acquire", tk: "b"}, {at: 61 * s, do: "fail", tk: "b", want: "timeout-after-30s"},
			{at: 61 * s, do: "state", want: "closed"},
			{at: 62 * s, do: "acquire", tk: "c"}, {at: 62 * s, do: "fail", tk: "c"},
			{at: 62 * s, do: "state", want: "open"},
		},
		"a failure dated when reported counts whatever was answered before": {
			{do: "acquire", tk: "a1"},
			{do: "acquire", tk: "a2"},
			{do: "answer", tk: "a2"},
			{at: 1 * s, do: "fail", tk: "a1"}, // refused: news of now
			{at: 2 * s, do: "acquire", tk: "b"}, {at: 2 * s, do: "fail", tk: "b"},
			{at: 2 * s, do: "state", want: "open"},
		},
		"http and https are different endpoints": {
			{do: "acquire", url: "http://a.test/", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", url: "http://a.test/", tk: "b"}, {do: "fail", tk: "b"},
			{do: "state", url: "http://a.test/x", want: "open"},
			{do: "state", url: "https://a.test/x", want: "closed"},
			{do: "acquire", url: "https://a.test/", want: "ok"},
			{do: "acquire", url: "http://A.TEST:80/other?q=1", want: "open 30s"},
			{do: "acquire", url: "http://user:pw@a.test/", want: "open 30s"},
			{do: "acquire", url: "http://a.test:8080/", want: "ok"},
		},
	}
	for name, rows := range tables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			setup(t, guard.Config{}).run(rows)
		})
	}
}

func TestThresholdAndWindow(t *testing.T) {
	t.Parallel()
	t.Run("threshold 3 counts only failures within one window", func(t *testing.T) {
		t.Parallel()
		setup(t, guard.Config{Threshold: 3, Window: 60 * s}).run([]step{
			{at: 0, do: "acquire", tk: "a"}, {at: 0, do: "fail", tk: "a"},
			{at: 40 * s, do: "acquire", tk: "b"}, {at: 40 * s, do: "fail", tk: "b"},
			// a is now 70s old: out of the window, so the streak is b, c.
			{at: 70 * s, do: "acquire", tk: "c"}, {at: 70 * s, do: "fail", tk: "c"},
			{at: 70 * s, do: "state", want: "closed"},
			{at: 100 * s, do: "acquire", tk: "d"}, {at: 100 * s, do: "fail", tk: "d"},
			{at: 100 * s, do: "state", want: "open"},
		})
	})
	t.Run("threshold 1 trips on the first counted failure", func(t *testing.T) {
		t.Parallel()
		setup(t, guard.Config{Threshold: 1, OpenFor: 5 * s}).run([]step{
			{do: "acquire", tk: "a"}, {do: "acquire", tk: "b"}, {do: "fail", tk: "a"},
			{do: "acquire", want: "open 5s"},
			{at: 5 * s, do: "fail", tk: "b"},
			{at: 5 * s, do: "acquire", want: "trial"},
		})
	})
}
