package guard_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// TestPinnedRecordsAreReclaimed fills the record table with tickets that
// are never reported: a dead host reported by another caller still trips
// once they are stale, and nothing the stale tickets report afterwards
// touches the records that replaced theirs.
func TestPinnedRecordsAreReclaimed(t *testing.T) {
	t.Parallel()
	const p1, p2, q = "http://p1.test/", "http://p2.test/", "http://q.test/"
	tables := []struct {
		name string
		cfg  guard.Config
		rows []step
	}{
		{"a dead host trips once the pinning tickets are stale", guard.Config{MaxEndpoints: 2}, []step{
			{at: 0, do: "acquire", tk: "p1", url: p1},
			{at: 0, do: "acquire", tk: "p2", url: p2},
			// Every record pinned by recent tickets: untracked, as before.
			{at: 0, do: "acquire", tk: "d0"},
			{at: 0, do: "fail", tk: "d0"},
			{at: 0, do: "state", want: "closed"},
			{at: 0, do: "len", want: "2"},
			// p2 is in use again: its quiet period starts afresh.
			{at: 5 * s, do: "acquire", tk: "p2b", url: p2},
			{at: 9*s + 999*time.Millisecond, do: "acquire", tk: "d1"},
			{at: 9*s + 999*time.Millisecond, do: "fail", tk: "d1"},
			{at: 9*s + 999*time.Millisecond, do: "state", want: "closed"},
			// p1 has been quiet for ten seconds: reclaimed for the dead host.
			{at: 11 * s, do: "acquire", tk: "d2"},
			{at: 11 * s, do: "fail", tk: "d2"},
			{at: 11 * s, do: "acquire", tk: "d3"},
			{at: 11 * s, do: "fail", tk: "d3"},
			{at: 11 * s, do: "acquire", want: "open 30s"},
			{at: 11 * s, do: "state", url: p1, want: "closed"},
			{at: 11 * s, do: "len", want: "2"},
			// The reclaimed record's ticket reports into nothing.
			{at: 12 * s, do: "fail", tk: "p1"},
			{at: 12 * s, do: "fail", tk: "p1"},
			{at: 12 * s, do: "release", tk: "p1"},
			{at: 12 * s, do: "state", want: "open"},
			{at: 12 * s, do: "acquire", want: "open 29s"},
			// p2 was used at 5 s, so it kept its record and its tickets
			// still count.
			{at: 12 * s, do: "answer", tk: "p2"},
			{at: 12 * s, do: "fail", tk: "p2b"},
			{at: 12 * s, do: "acquire", tk: "p2c", url: p2},
			{at: 12 * s, do: "fail", tk: "p2c"},
			{at: 12 * s, do: "state", url: p2, want: "open"},
		}},
		{"a stale ticket cannot clear its successor", guard.Config{MaxEndpoints: 1}, []step{
			{at: 0, do: "acquire", tk: "s1", url: p1},
			{at: 0, do: "acquire", tk: "old", url: p1},
			{at: 0, do: "fail", tk: "s1"}, // a streak: the record holds evidence
			{at: 0, do: "acquire", tk: "x0", url: q},
			{at: 0, do: "fail", tk: "x0"},
			{at: 0, do: "state", url: q, want: "closed"},
			// Stale, but marked in use: the hand passes it once more.
			{at: 11 * s, do: "acquire", tk: "x1", url: q},
			{at: 11 * s, do: "answer", tk: "x1"},
			{at: 11 * s, do: "len", want: "1"},
			{at: 13 * s, do: "acquire", tk: "x2", url: q},
			{at: 13 * s, do: "answer", tk: "x2"},
			{at: 13 * s, do: "state", url: p1, want: "closed"},
			// p1 again, in a new record that trips.
			{at: 13 * s, do: "acquire", tk: "n1", url: p1},
			{at: 13 * s, do: "fail", tk: "n1"},
			{at: 13 * s, do: "acquire", tk: "n2", url: p1},
			{at: 13 * s, do: "fail", tk: "n2"},
			{at: 13 * s, do: "state", url: p1, want: "open"},
			// An answer clears any record it belongs to, but not this one.
			{at: 14 * s, do: "answer", tk: "old"},
			{at: 14 * s, do: "fail", tk: "s1"},
			{at: 14 * s, do: "state", url: p1, want: "open"},
			{at: 14 * s, do: "acquire", url: p1, want: "open 29s"},
		}},
		{"a trial is never stale", guard.Config{MaxEndpoints: 1}, []step{
			{at: 0, do: "acquire", tk: "a1"},
			{at: 0, do: "fail", tk: "a1"},
			{at: 0, do: "acquire", tk: "a2"},
			{at: 0, do: "fail", tk: "a2"},
			{at: 30 * s, do: "acquire", tk: "tr", want: "trial"},
			{at: 30 * s, do: "acquire", tk: "x0", url: q},
			{at: 30 * s, do: "fail", tk: "x0"},
			{at: 5 * time.Minute, do: "acquire", tk: "x1", url: q},
			{at: 5 * time.Minute, do: "fail", tk: "x1"},
			{at: 5 * time.Minute, do: "state", url: q, want: "closed"},
			// The first look only cleared the record's in-use mark; a
			// second new endpoint a back-off later finds it unmarked, and
			// only the trial keeps it.
			{at: 5*time.Minute + s, do: "acquire", tk: "x2", url: q},
			{at: 5*time.Minute + s, do: "fail", tk: "x2"},
			{at: 5*time.Minute + s, do: "state", url: q, want: "closed"},
			{at: 5*time.Minute + s, do: "len", want: "1"},
			{at: 5*time.Minute + s, do: "state", want: "half-open"},
			{at: 5*time.Minute + s, do: "acquire", want: "open 0s"},
			{at: 5*time.Minute + s, do: "fail", tk: "tr"},
			{at: 5*time.Minute + s, do: "acquire", want: "open 30s"},
		}},
		{"exempt tickets go stale like any other", guard.Config{MaxEndpoints: 1}, []step{
			{at: 0, do: "exempt", tk: "e1", url: p1},
			{at: 0, do: "acquire", tk: "x0", url: q},
			{at: 0, do: "release", tk: "x0"},
			// Seen again, q asks for room: the hand's first pass starts
			// the exempt ticket's quiet period.
			{at: 0, do: "acquire", tk: "x1", url: q},
			{at: 0, do: "release", tk: "x1"},
			{at: 11 * s, do: "acquire", tk: "d1"},
			{at: 11 * s, do: "fail", tk: "d1"},
			{at: 11 * s, do: "acquire", tk: "d2"},
			{at: 11 * s, do: "fail", tk: "d2"},
			{at: 11 * s, do: "state", want: "open"},
			{at: 11 * s, do: "answer", tk: "e1"},
			{at: 11 * s, do: "state", want: "open"},
		}},
	}
	for _, tc := range tables {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			setup(t, tc.cfg).run(tc.rows)
		})
	}
}

// TestPinnedReclaimRace reclaims records pinned by held tickets while
// other goroutines admit, report and release on the same endpoints, for
// the race detector and for what must hold at the end: the cap, and no
// live record counting a ticket that was settled, whichever record it
// was admitted by.
func TestPinnedReclaimRace(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{MaxEndpoints: 4, Threshold: 2})
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			var heldTk []*guard.Ticket
			for i := range 1500 {
				u := fmt.Sprintf("http://h%d.test/", (w*31+i)%12)
				if i%50 == 0 {
					b.clk.Advance(11 * s)
				}
				tk, err := b.g.Acquire(u)
				if err != nil {
					if !errors.Is(err, guard.ErrOpen) {
						t.Errorf("Acquire: %v", err)
					}
					continue
				}
				switch i % 5 {
				case 0, 1:
					heldTk = append(heldTk, tk) // settled late, maybe after a reclaim
				case 2:
					tk.Failed(errRefused)
				case 3:
					tk.Answered()
				default:
					tk.Release()
				}
				if len(heldTk) > 20 {
					for j, h := range heldTk {
						if j%2 == 0 {
							h.Failed(errTimeout)
						} else {
							h.Answered()
						}
					}
					heldTk = heldTk[:0]
				}
				if n := b.g.Len(); n > 4 {
					t.Errorf("Len = %d above MaxEndpoints", n)
				}
			}
			for _, h := range heldTk {
				h.Release()
			}
		})
	}
	wg.Wait()
	for _, st := range b.g.Endpoints() {
		if st.TicketsOut != 0 || st.TrialOut {
			t.Errorf("%s: %d tickets out, trial out %v, after every ticket settled", st.Endpoint, st.TicketsOut, st.TrialOut)
		}
	}
}
