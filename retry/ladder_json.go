package retry

import (
	"encoding/json"
	"fmt"
	"time"
)

// Ladder is a list of delays: step n is the wait after the n-th failure
// (or, for a class that escalates by sources, after evidence from n
// distinct sources), and the last step repeats. In JSON it is a list of
// Go duration strings, ["30m", "2h", "168h"], which is how the daemon's
// configuration file spells it.
type Ladder []time.Duration

// MarshalJSON writes the steps as duration strings.
func (l Ladder) MarshalJSON() ([]byte, error) {
	out := make([]string, len(l))
	for i, d := range l {
		out[i] = d.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a list of duration strings. A step that does not
// parse is an *InputError naming its place ("[2]"); whether the steps are
// in range is Config.Validate's to say.
func (l *Ladder) UnmarshalJSON(b []byte) error {
	var raw []string
	if err := json.Unmarshal(b, &raw); err != nil {
		return &InputError{Reason: fmt.Sprintf("want a list of durations such as [\"30m\", \"2h\"]: %v", err)}
	}
	out := make(Ladder, len(raw))
	for i, s := range raw {
		d, err := time.ParseDuration(s)
		if err != nil {
			return invalid(fmt.Sprintf("[%d]", i), "%q is not a duration such as \"90m\" or \"24h\"", s)
		}
		out[i] = d
	}
	*l = out
	return nil
}

// Escalation says what selects the step of a class's ladder.
type Escalation string

// The escalations.
const (
	// ByFailures takes the step from the failures in a row so far: the
	// n-th failure waits step n. The zero Escalation means ByFailures.
	ByFailures Escalation = "failures"
	// BySources takes the step from how many distinct sources reported
	// this class for the item (among the evidence it keeps, this failure
	// included): evidence from several sources deserves a longer wait than
	// one source repeating itself. A failure that names no source adds no
	// source; the step is at least the first.
	BySources Escalation = "sources"
)

// ClassConfig is the schedule of one failure class.
type ClassConfig struct {
	// Ladder is the class's delay ladder: at least one step, each positive
	// and at most ten years.
	Ladder Ladder `json:"ladder"`
	// Escalate selects the ladder's step. Empty means ByFailures.
	Escalate Escalation `json:"escalate,omitempty"`
	// Host makes the class host-level: the item's host answering again
	// ends its wait (Scheduler.WakeHost). The classes of package failure
	// that are host-level are so whatever this says; false leaves any
	// other class to its ladder.
	Host bool `json:"host,omitempty"`
}
