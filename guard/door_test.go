package guard_test

import (
	"testing"

	"github.com/hostguard/hostguard/guard"
)

// TestDoorAtTheCap is the door's rules, one table each. The guard holds
// one record (MaxEndpoints 1), for p, filled first, so that the default
// endpoint is new at the cap.
func TestDoorAtTheCap(t *testing.T) {
	t.Parallel()
	const p = "http://p.test/"
	full := []step{
		{at: 0, do: "acquire", tk: "p", url: p},
		{at: 0, do: "answer", tk: "p", url: p},
	}
	tables := []struct {
		name string
		rows []step
	}{
		{"a first sighting makes no record, a second one does", []step{
			{do: "acquire", tk: "a1", want: "ok"},
			{do: "answer", tk: "a1"},
			{do: "held", want: "false"},
			{do: "held", url: p, want: "true"},
			{do: "acquire", tk: "a2", want: "ok"},
			{do: "answer", tk: "a2"},
			{do: "held", want: "true"},
			{do: "held", url: p, want: "false"},
			{do: "len", want: "1"},
		}},
		{"a failure makes the record and counts: the next fan-out trips", []step{
			{do: "acquire", tk: "d1"},
			{do: "fail", tk: "d1"},
			{do: "held", want: "true"},
			{do: "state", want: "closed"},
			{do: "acquire", tk: "d2", want: "ok"},
			{do: "fail", tk: "d2"},
			{do: "state", want: "open"},
			{do: "acquire", want: "open 30s"},
		}},
		{"a door ticket failing after a counted failure is its sibling", []step{
			{do: "acquire", tk: "d1"}, // at the door
			{do: "acquire", tk: "d2"}, // seen again: the record
			{do: "fail", tk: "d2"},    // counted
			{do: "fail", tk: "d1"},    // in flight before it: a sibling
			{do: "state", want: "closed"},
			{do: "acquire", tk: "d3"},
			{do: "fail", tk: "d3"},
			{do: "state", want: "open"},
		}},
		{"a door ticket failing first makes its record's tickets its siblings", []step{
			{do: "acquire", tk: "d1"},
			{do: "acquire", tk: "d2"},
			{do: "fail", tk: "d1"}, // counted, on the record d2 holds
			{do: "fail", tk: "d2"}, // admitted before that failure: a sibling
			{do: "state", want: "closed"},
			{do: "acquire", tk: "d3"},
			{do: "fail", tk: "d3"},
			{do: "state", want: "open"},
		}},
		{"a Reset voids the door tickets admitted before it", []step{
			{do: "acquire", tk: "d1"},
			{do: "reset"},
			{do: "fail", tk: "d1"},
			{do: "acquire", tk: "d2"},
			{do: "fail", tk: "d2"},
			{do: "state", want: "closed"},
			{do: "acquire", tk: "d3"},
			{do: "fail", tk: "d3"},
			{do: "state", want: "open"},
		}},
		{"a ResetAll voids them too", []step{
			{do: "acquire", tk: "d1"},
			{do: "reset-all"},
			{do: "fail", tk: "d1"},
			{do: "held", want: "false"},
			{do: "held", url: p, want: "true"},
		}},
		{"an exempt door ticket's failure makes no record", []step{
			{do: "exempt", tk: "e1", want: "ok"},
			{do: "fail", tk: "e1"},
			{do: "held", want: "false"},
		}},
		{"an inconclusive failure makes no record", []step{
			{do: "acquire", tk: "d1"},
			{do: "fail", tk: "d1", want: "canceled"},
			{do: "held", want: "false"},
			{do: "acquire", tk: "d2"}, // seen again
			{do: "release", tk: "d2"},
			{do: "held", want: "true"},
			{do: "state", want: "closed"},
			{do: "acquire", tk: "d3"},
			{do: "fail", tk: "d3"},
			{do: "state", want: "closed"},
		}},
		{"a give-up the wait rule never charges makes no record", []step{
			{do: "acquire", tk: "d1"},
			{do: "fail", tk: "d1", want: "gave-up-after-500ms"},
			{do: "held", want: "false"},
		}},
		{"with the kill switch on, a door ticket's failure makes no record", []step{
			{do: "acquire", tk: "d1"},
			{do: "disable"},
			{do: "fail", tk: "d1"},
			{do: "enable"},
			{do: "held", want: "false"},
		}},
		{"a slow answer makes the record and keeps what the host needs", []step{
			{do: "acquire", tk: "d1"},
			{do: "answer-after", tk: "d1", want: "2s"},
			{do: "held", want: "true"},
			{do: "acquire", tk: "d2"},
			{do: "fail", tk: "d2", want: "gave-up-after-3s"}, // within 4 × 2s: excused
			{do: "acquire", tk: "d3"},
			{do: "fail", tk: "d3", want: "gave-up-after-3s"},
			{do: "state", want: "closed"},
		}},
		{"a fast answer makes no record", []step{
			{do: "acquire", tk: "d1"},
			{do: "answer-after", tk: "d1", want: "100ms"},
			{do: "held", want: "false"},
		}},
		{"a door ticket's answer clears the record made since", []step{
			{do: "acquire", tk: "d1"},
			{do: "acquire", tk: "d2"},
			{do: "fail", tk: "d2"},
			{do: "answer", tk: "d1"},
			{do: "acquire", tk: "d3"},
			{do: "fail", tk: "d3"},
			{do: "state", want: "closed"},
		}},
		{"a door ticket's timeout after an answer on its record is older news", []step{
			{do: "acquire", tk: "d1"}, // at the door, hanging
			{do: "acquire", tk: "d2"}, // seen again: the record
			{do: "answer", tk: "d2"},
			{do: "fail", tk: "d1", want: "timeout-after-30s"},
			{do: "acquire", tk: "d3"},
			{do: "fail", tk: "d3"},
			{do: "state", want: "closed"},
		}},
		{"a door ticket's release touches no record", []step{
			{do: "acquire", tk: "d1"},
			{do: "release", tk: "d1"},
			{do: "held", want: "false"},
			{do: "len", want: "1"},
		}},
	}
	for _, tc := range tables {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, guard.Config{MaxEndpoints: 1})
			b.run(append(append([]step(nil), full...), tc.rows...))
			for _, st := range b.g.Endpoints() {
				if st.TicketsOut != 0 {
					t.Errorf("%s has %d tickets out after every ticket settled", st.Endpoint, st.TicketsOut)
				}
			}
		})
	}
}
