package fleet

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunTracedWritesTheGuardsSteps runs the daemon's settings over a
// plan with a host that refuses for good: the trace names the run, shows
// the refusing host's endpoint opening and every probe the run sent.
func TestRunTracedWritesTheGuardsSteps(t *testing.T) {
	t.Parallel()
	p, err := NewPlan(Config{
		Seed:     1,
		Timeout:  60 * time.Millisecond,
		Mix:      Mix{Healthy: 1, Refused: 1, Flapping: 2},
		Workers:  2,
		Sessions: 8,
		Limit:    20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := PolicyNamed("hostguard")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	tr := NewTracer(&b)
	res, err := RunTraced(context.Background(), p, pol, tr)
	if err != nil {
		t.Fatal(err)
	}
	trace := b.String()
	if !strings.HasPrefix(trace, "# hostguard, run 1\n") {
		t.Fatalf("the trace does not begin with its run's header:\n%.200s", trace)
	}
	if !strings.Contains(trace, "guard http://127.0.0.1:") || !strings.Contains(trace, "closed -> open") {
		t.Errorf("no endpoint opened in the trace of a run with a refusing host:\n%.2000s", trace)
	}
	if int64(strings.Count(trace, " probes http://")) != res.Probes {
		t.Errorf("the trace shows %d probes; the run sent %d", strings.Count(trace, " probes http://"), res.Probes)
	}
	var nothing *Tracer
	nothing.Logf("a nil Tracer writes %s", "nothing") // must not panic
}

// TestTraceListsRefusalsOfFlappingHostsWhileUp: the end of a run's trace
// lists each flapping host refused while up, with when, and its outages
// up to the run's end; refusals while down, and other hosts, are left
// out.
func TestTraceListsRefusalsOfFlappingHostsWhileUp(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	p := &Plan{Hosts: []HostSpec{
		{Kind: Flapping, Schedule: Schedule{{From: 100 * ms, To: 300 * ms, Hang: true}, {From: 5 * time.Second, To: 6 * time.Second}}},
		{Kind: Flapping, Schedule: Schedule{{From: 0, To: 50 * ms}}},
		{Kind: Refused, Schedule: Schedule{{From: 0, To: Forever}}},
	}}
	hosts := []*Host{{addr: "127.0.0.1:1"}, {addr: "127.0.0.1:2"}, {addr: "127.0.0.1:3"}}
	res := &Result{Wall: time.Second, Requests: []Request{
		{Host: 0, Start: 320 * ms, Refused: true, Up: true},
		{Host: 0, Start: 310 * ms, Refused: true, Up: true},
		{Host: 0, Start: 200 * ms, Refused: true, Up: false},
		{Host: 0, Start: 400 * ms, Up: true},
		{Host: 1, Start: 20 * ms, Refused: true, Up: false},
		{Host: 2, Start: 20 * ms, Refused: true, Up: true},
	}}
	var b strings.Builder
	NewTracer(&b).refusals(p, hosts, res)
	want := "flapping host 0 http://127.0.0.1:1: 2 refused while up, at [310 320] ms\n" +
		"  outage 100–300 ms, hang true\n"
	if got := b.String(); got != want {
		t.Errorf("trace:\n%s\nwant:\n%s", got, want)
	}
}
