package guard_test

import (
	"testing"
	"testing/synctest"

	"github.com/hostguard/hostguard/guard"
)

const b2 = "http://b.test/"

func TestResetAll(t *testing.T) {
	t.Parallel()
	tables := map[string]struct {
		cfg  guard.Config
		rows []step
	}{
		"clears every cooldown and streak": {rows: []step{
			{do: "acquire", tk: "a"}, {do: "fail", tk: "a"},
			{do: "acquire", tk: "a2"}, {do: "fail", tk: "a2"},
			{do: "acquire", url: b2, tk: "b"}, {do: "fail", tk: "b"},
			{do: "state", want: "open"},
			{at: s, do: "reset-all"},
			{at: s, do: "state", want: "closed"},
			{at: s, do: "acquire", want: "ok"},
			// b's streak is gone too: one more failure does not trip.
			{at: 2 * s, do: "acquire", url: b2, tk: "b2"}, {at: 2 * s, do: "fail", tk: "b2"},
			{at: 2 * s, do: "state", url: b2, want: "closed"},
			{at: 2 * s, do: "len", want: "2"},
		}},
		"reports from tickets acquired before it count for nothing": {rows: []step{
			{do: "acquire", tk: "old1"}, {do: "acquire", tk: "old2"},
			{do: "acquire", url: b2, tk: "oldb1"}, {do: "acquire", url: b2, tk: "oldb2"},
			{at: s, do: "reset-all"},
			{at: 2 * s, do: "fail", tk: "old1"}, {at: 2 * s, do: "fail", tk: "old2", want: "timeout"},
			{at: 2 * s, do: "fail", tk: "oldb1"}, {at: 2 * s, do: "fail", tk: "oldb2"},
			{at: 2 * s, do: "state", want: "closed"},
			{at: 2 * s, do: "state", url: b2, want: "closed"},
			// Tickets acquired after it count as usual.
			{at: 3 * s, do: "acquire", tk: "new1"}, {at: 3 * s, do: "fail", tk: "new1"},
			{at: 3 * s, do: "acquire", tk: "new2"}, {at: 3 * s, do: "fail", tk: "new2"},
			{at: 3 * s, do: "state", want: "open"},
		}},
		"an old trial's release cannot free a newer trial's slot": {rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 31 * s, do: "reset-all"},
			{at: 32 * s, do: "acquire", tk: "c"}, {at: 32 * s, do: "fail", tk: "c"},
			{at: 32 * s, do: "acquire", tk: "d"}, {at: 32 * s, do: "fail", tk: "d"},
			{at: 62 * s, do: "acquire", tk: "t2", want: "trial"},
			{at: 63 * s, do: "release", tk: "t1"},
			{at: 63 * s, do: "fail", tk: "t1"},
			{at: 63 * s, do: "acquire", want: "open 0s"},
		})},
		"an answer from before it still clears": {rows: []step{
			{do: "acquire", tk: "old"},
			{at: s, do: "reset-all"},
			{at: 2 * s, do: "acquire", tk: "a"}, {at: 2 * s, do: "fail", tk: "a"},
			{at: 3 * s, do: "answer", tk: "old"},
			{at: 4 * s, do: "acquire", tk: "b"}, {at: 4 * s, do: "fail", tk: "b"},
			{at: 4 * s, do: "state", want: "closed"},
		}},
		"growth starts again at OpenFor": {cfg: guard.Config{MaxOpenFor: 120 * s}, rows: rows(trip, []step{
			{at: 30 * s, do: "acquire", tk: "t1", want: "trial"},
			{at: 30 * s, do: "fail", tk: "t1"},
			{at: 30 * s, do: "acquire", want: "open 60s..66s"},
			{at: 40 * s, do: "reset-all"},
			{at: 41 * s, do: "acquire", tk: "c"}, {at: 41 * s, do: "fail", tk: "c"},
			{at: 41 * s, do: "acquire", tk: "d"}, {at: 41 * s, do: "fail", tk: "d"},
			{at: 41 * s, do: "acquire", want: "open 30s"},
		})},
		"toggling the kill switch resets nothing": {rows: rows(trip, []step{
			{at: s, do: "disable"},
			{at: s, do: "acquire", want: "ok"},
			{at: 2 * s, do: "enable"},
			{at: 2 * s, do: "acquire", want: "open 28s"},
		})},
		"works while the guard is disabled": {rows: rows(trip, []step{
			{at: s, do: "disable"},
			{at: s, do: "reset-all"},
			{at: 2 * s, do: "enable"},
			{at: 2 * s, do: "acquire", want: "ok"},
		})},
	}
	for name, tc := range tables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			setup(t, tc.cfg).run(tc.rows)
		})
	}
}

func TestResetAllDuringAProbe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupProbes(t, guard.Config{}, true)
		defer b.shutdown()
		b.run(rows(trip, []step{
			{at: 10 * s, do: "acquire", want: "open 20s"},
			{at: 30 * s, do: "probes", want: "1"},
			{at: 31 * s, do: "reset-all"},
			{at: 31 * s, do: "cancelled", want: "true"},
			{at: 31 * s, do: "state", want: "closed"},
			{at: 32 * s, do: "acquire", tk: "c"}, {at: 32 * s, do: "fail", tk: "c"},
			// The probe fails late, into nothing.
			{at: 33 * s, do: "probe", want: "timeout"},
			{at: 33 * s, do: "state", want: "closed"},
		}))
		if st := b.g.Endpoints()[0]; st.Epoch != 1 || st.Probing || st.TicketsOut != 0 {
			t.Errorf("after ResetAll and the probe: %+v", st)
		}
		got := transitionsOf(b.log())
		if want := "closed->open, open->half-open, half-open->closed"; got != want {
			t.Errorf("transitions %s, want %s", got, want)
		}
	})
}
