package fleet

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// Tracer writes what a run's guards did, one line each, with the
// milliseconds since the run's start: their transitions and probes, the
// transitions nodes receive from each other, and, at the end, each
// flapping host's outages beside the requests refused while it was up.
// It is for finding out where a figure of the summary comes from. A nil
// *Tracer writes nothing. It is safe for concurrent use.
type Tracer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	runs  map[string]int // runs begun, by policy
}

// NewTracer returns a Tracer writing to w.
func NewTracer(w io.Writer) *Tracer { return &Tracer{w: w, runs: map[string]int{}} }

// begin starts a run's lines at start, under a header naming the policy
// and which of its runs this is.
func (t *Tracer) begin(policy string, start time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = start
	t.runs[policy]++
	fmt.Fprintf(t.w, "# %s, run %d\n", policy, t.runs[policy])
}

// Logf writes one line, stamped with the milliseconds since the run began.
func (t *Tracer) Logf(format string, args ...any) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%9.1f ", t.ms(time.Now()))
	fmt.Fprintf(t.w, format+"\n", args...)
}

// ms is at in milliseconds since the run began. Call with mu held.
func (t *Tracer) ms(at time.Time) float64 {
	return float64(at.Sub(t.start).Microseconds()) / 1000
}

// transitions returns an OnTransition for one guard, named who.
func (t *Tracer) transitions(who string) func(string, guard.State, guard.State) {
	if t == nil {
		return nil
	}
	return func(ep string, from, to guard.State) { t.Logf("%s %s %v -> %v", who, ep, from, to) }
}

// applied logs a transition a node received, its times as offsets.
func (t *Tracer) applied(who string, tr guard.Transition) {
	if t == nil {
		return
	}
	t.mu.Lock()
	at, since, until := t.ms(tr.At), t.ms(tr.Since), t.ms(tr.Until)
	t.mu.Unlock()
	t.Logf("%s applies %v %s at=%.1f since=%.1f until=%.1f", who, tr.Change, tr.Endpoint, at, since, until)
}

// refusals writes, for each flapping host refused while up, its outages
// and when those refused requests started.
func (t *Tracer) refusals(p *Plan, hosts []*Host, res *Result) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, h := range p.Hosts {
		if h.Kind != Flapping {
			continue
		}
		var at []int64
		for _, q := range res.Requests {
			if q.Host == i && q.Refused && q.Up {
				at = append(at, q.Start.Milliseconds())
			}
		}
		if len(at) == 0 {
			continue
		}
		slices.Sort(at)
		fmt.Fprintf(t.w, "flapping host %d %s: %d refused while up, at %v ms\n", i, hosts[i].URL(), len(at), at)
		for _, o := range h.Schedule {
			if o.From > res.Wall {
				break
			}
			fmt.Fprintf(t.w, "  outage %d–%d ms, hang %v\n", o.From.Milliseconds(), o.To.Milliseconds(), o.Hang)
		}
	}
}

// probe runs send, a probe of endpoint by who, between two lines.
func (t *Tracer) probe(who, endpoint string, send func() error) error {
	t.Logf("%s probes %s", who, endpoint)
	err := send()
	t.Logf("%s probe of %s: %v", who, endpoint, err)
	return err
}
