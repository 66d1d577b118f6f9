package retry

import (
	"strings"
	"testing"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// TestStatesAndOpsAreTheDrivers holds every State and Op to the
// retrydriver constant of the same meaning: the Scheduler converts between
// the two by value, and a store writes the driver's values to its columns.
func TestStatesAndOpsAreTheDrivers(t *testing.T) {
	t.Parallel()
	states := map[State]retrydriver.State{
		Pending:   retrydriver.Pending,
		Scheduled: retrydriver.Scheduled,
		Leased:    retrydriver.Leased,
		Done:      retrydriver.Done,
	}
	for _, s := range States {
		d, ok := states[s]
		switch {
		case !ok:
			t.Errorf("state %v (%d) has no retrydriver counterpart in this test", s, int(s))
		case int(d) != int(s) || d.String() != s.String():
			t.Errorf("state %v is %d in retry, %d (%v) in retrydriver", s, int(s), int(d), d)
		}
	}
	if len(states) != len(States) {
		t.Errorf("retry.States lists %d states, this test pairs %d", len(States), len(states))
	}

	ops := map[Op]retrydriver.Op{
		OpSucceed: retrydriver.OpSucceed,
		OpFail:    retrydriver.OpFail,
		OpRelease: retrydriver.OpRelease,
		OpExtend:  retrydriver.OpExtend,
		opExpire:  retrydriver.OpExpire,
	}
	// Every Op with a name is one retry knows; a new one must be paired.
	for o := range Op(64) {
		if strings.HasPrefix(o.String(), "Op(") {
			continue
		}
		d, ok := ops[o]
		switch {
		case !ok:
			t.Errorf("operation %v (%d) has no retrydriver counterpart in this test", o, int(o))
		case int(d) != int(o) || d.String() != o.String():
			t.Errorf("operation %v is %d in retry, %d (%v) in retrydriver", o, int(o), int(d), d)
		}
	}
}
