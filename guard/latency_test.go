package guard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
)

// waitStep is one row of a wait-rule table: at is the fake time since the
// table's start, and do is one of
//
//	give-up <owed>     acquire a ticket, fail it with a caller's give-up after owed
//	deadline <owed>    the same, for a caller's own deadline (a WaitError around DeadlineExceeded)
//	answer <need>      acquire a ticket, answer it after need (AnsweredAfter)
//	timeout            acquire a ticket, fail it with a plain timeout (the operator's own)
//
// and want is the State after the row ("closed", "open"), or "refused"
// when the row's Acquire must be refused.
type waitStep struct {
	at   time.Duration
	do   string
	owed time.Duration
	want string
}

func runWaits(t *testing.T, cfg guard.Config, rows []waitStep) {
	t.Helper()
	b := setup(t, cfg)
	for i, r := range rows {
		b.clk.Set(epoch.Add(r.at))
		where := fmt.Sprintf("row %d (%v %s %v)", i, r.at, r.do, r.owed)
		tk, err := b.g.Acquire(defaultURL)
		if r.want == "refused" {
			if !errors.Is(err, guard.ErrOpen) {
				t.Fatalf("%s: Acquire = %v, want a fast-fail", where, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: Acquire: %v", where, err)
		}
		switch r.do {
		case "give-up":
			tk.Failed(&guard.WaitError{Owed: r.owed, Err: context.Canceled})
		case "deadline":
			tk.Failed(&guard.WaitError{Owed: r.owed, Err: fmt.Errorf("get: %w", context.DeadlineExceeded)})
		case "answer":
			tk.AnsweredAfter(r.owed)
		case "timeout":
			tk.Failed(errTimeout)
		default:
			t.Fatalf("%s: unknown operation", where)
		}
		if got := b.g.State(defaultURL).String(); got != r.want {
			t.Fatalf("%s: state %s, want %s", where, got, r.want)
		}
	}
}

// TestWaitRule drives the rule that judges callers who stop waiting: a
// give-up counts once the endpoint has owed its answer for longer than
// the floor (1s by default) and longer than WaitFactor times what it
// recently needed to answer.
func TestWaitRule(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	tables := map[string][]waitStep{
		"a 2s client against a silent host trips it on the second give-up": {
			{do: "give-up", owed: 2 * s, want: "closed"},
			{at: 2 * s, do: "give-up", owed: 2 * s, want: "open"},
			{at: 3 * s, want: "refused"},
		},
		"a caller's deadline is a give-up": {
			{do: "deadline", owed: 2 * s, want: "closed"},
			{at: 2 * s, do: "deadline", owed: 2 * s, want: "open"},
		},
		"waits at or under the floor are inconclusive, whatever was asked for": {
			{do: "give-up", owed: time.Microsecond, want: "closed"},
			{do: "deadline", owed: time.Microsecond, want: "closed"},
			{do: "give-up", owed: s, want: "closed"},
			{do: "deadline", owed: s, want: "closed"},
			{do: "give-up", owed: s, want: "closed"},
			// One over the floor, and the earlier ones never counted.
			{do: "give-up", owed: s + 1, want: "closed"},
			{do: "give-up", owed: s + 1, want: "open"},
		},
		"a host that answers in 5s is not tripped by 2s clients": {
			{do: "answer", owed: 5 * s, want: "closed"},
			{at: 1 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 3 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 5 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 60 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 100 * s, do: "answer", owed: 5 * s, want: "closed"},
			{at: 110 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 200 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 229 * s, do: "give-up", owed: 2 * s, want: "closed"},
			// Patient callers still count: more than 4 × 5s.
			{at: 230 * s, do: "give-up", owed: 21 * s, want: "closed"},
			{at: 231 * s, do: "give-up", owed: 21 * s, want: "open"},
		},
		"just over k times the need counts": {
			{do: "answer", owed: 500 * ms, want: "closed"},
			{do: "give-up", owed: 2 * s, want: "closed"},
			{do: "give-up", owed: 2 * s, want: "closed"},
			{do: "give-up", owed: 2*s + 1, want: "closed"},
			{do: "give-up", owed: 2*s + 1, want: "open"},
		},
		"a fast host is judged by the floor alone": {
			{do: "answer", owed: 20 * ms, want: "closed"},
			{do: "give-up", owed: 1500 * ms, want: "closed"},
			{do: "give-up", owed: 1500 * ms, want: "open"},
		},
		"the need rises at once and eases down over faster answers": {
			{do: "answer", owed: 4 * s, want: "closed"},
			{do: "answer", owed: 100 * ms, want: "closed"}, // 3.5125s
			{do: "give-up", owed: 14 * s, want: "closed"},
			{do: "give-up", owed: 14 * s, want: "closed"},
			{do: "answer", owed: 100 * ms, want: "closed"}, // 3.0859s
			{do: "answer", owed: 100 * ms, want: "closed"}, // 2.7127s
			{do: "give-up", owed: 11 * s, want: "closed"},
			{do: "give-up", owed: 11 * s, want: "open"},
		},
		"a slow host nobody has seen answer for a window is judged by the floor": {
			{do: "answer", owed: 5 * s, want: "closed"},
			{at: 10 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 130 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 130*s + 1, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 131 * s, do: "give-up", owed: 2 * s, want: "open"},
		},
		"an answer renews the need's standing": {
			{do: "answer", owed: 5 * s, want: "closed"},
			{at: 10 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 100 * s, do: "answer", owed: 5 * s, want: "closed"},
			{at: 131 * s, do: "give-up", owed: 2 * s, want: "closed"},
			{at: 200 * s, do: "give-up", owed: 2 * s, want: "closed"},
		},
		"the operator's own timeout counts whatever the need": {
			{do: "answer", owed: 5 * s, want: "closed"},
			{do: "timeout", want: "closed"},
			{do: "timeout", want: "open"},
		},
		"an answer between give-ups clears the streak": {
			{do: "give-up", owed: 2 * s, want: "closed"},
			{do: "answer", owed: 10 * ms, want: "closed"},
			{do: "give-up", owed: 2 * s, want: "closed"},
			{do: "give-up", owed: 2 * s, want: "open"},
		},
	}
	for name, rows := range tables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runWaits(t, guard.Config{}, rows)
		})
	}
}

// TestWaitRuleSettings checks the floor's setting and the rule turned off.
func TestWaitRuleSettings(t *testing.T) {
	t.Parallel()
	t.Run("a floor of its own", func(t *testing.T) {
		t.Parallel()
		runWaits(t, guard.Config{WaitFloor: 3 * s}, []waitStep{
			{do: "give-up", owed: 2 * s, want: "closed"},
			{do: "give-up", owed: 2 * s, want: "closed"},
			{do: "give-up", owed: 4 * s, want: "closed"},
			{do: "give-up", owed: 4 * s, want: "open"},
		})
	})
	t.Run("off: give-ups never count, deadlines always do", func(t *testing.T) {
		t.Parallel()
		runWaits(t, guard.Config{WaitFloor: -1}, []waitStep{
			{do: "give-up", owed: time.Hour, want: "closed"},
			{do: "give-up", owed: time.Hour, want: "closed"},
			{do: "answer", owed: 5 * s, want: "closed"},
			{do: "deadline", owed: time.Microsecond, want: "closed"},
			{do: "deadline", owed: time.Microsecond, want: "open"},
		})
	})
}

// TestWaitRuleSkipsWhatCannotCount checks that give-ups which could not
// count anyway (exempt, a sibling) leave the rule's doubts alone, and
// that a give-up is inconclusive to anyone who classifies it.
func TestWaitRuleSkipsWhatCannotCount(t *testing.T) {
	t.Parallel()
	b := setup(t, guard.Config{})
	tk, _ := b.g.Acquire(defaultURL)
	tk.AnsweredAfter(5 * s)
	for range 3 {
		ex, _ := b.g.AcquireExempt(defaultURL)
		ex.Failed(&guard.WaitError{Owed: 2 * s})
	}
	// Exempt give-ups a whole window ago did not start the doubt: a 2s
	// give-up now is still excused by the 5s need.
	b.clk.Set(epoch.Add(200 * s))
	for range 3 {
		tk, _ := b.g.Acquire(defaultURL)
		tk.Failed(&guard.WaitError{Owed: 2 * s})
	}
	if got := b.g.State(defaultURL); got != guard.Closed {
		t.Fatalf("state %v after excused give-ups; want closed", got)
	}
	if c := failure.Classify(&guard.WaitError{Owed: 2 * s}); c != failure.Timeout {
		t.Errorf("Classify(bare WaitError) = %v; want timeout", c)
	}
	if c := failure.Classify(&guard.WaitError{Owed: 2 * s, Err: context.Canceled}); c != failure.Canceled {
		t.Errorf("Classify(WaitError around Canceled) = %v; want canceled", c)
	}
}

// TestAnsweredAfterClosedPathAllocatesNothing keeps the closed path free
// of allocations beyond the ticket with the rule's bookkeeping in.
func TestAnsweredAfterClosedPathAllocatesNothing(t *testing.T) {
	g := guard.New(guard.Config{Disabled: func() bool { return false }})
	allocs := testing.AllocsPerRun(1000, func() {
		tk, _ := g.Acquire(defaultURL)
		tk.AnsweredAfter(time.Millisecond)
		tk.Release()
	})
	if allocs > 1 {
		t.Errorf("Acquire + AnsweredAfter + Release allocate %v times; want 1 (the ticket)", allocs)
	}
}
