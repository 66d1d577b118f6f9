package fleet

import (
	"testing"
	"time"
)

func TestWaitingIsAUnionOfDownRequests(t *testing.T) {
	t.Parallel()
	reqs := []Request{
		{Start: 0, Dur: 10},                 // before the window
		{Start: 100, Dur: 30},               // 100..130
		{Start: 110, Dur: 30},               // overlaps: adds 130..140
		{Start: 150, Dur: 5, Up: true},      // host up: not waiting on a down host
		{Start: 160, Dur: 5, Refused: true}, // never sent
		{Start: 200, Dur: 10},               // 200..210
		{Start: 300, Dur: 10},               // after the window
	}
	if got := waiting(reqs, 50, 250); got != 50 {
		t.Fatalf("waiting = %d, want 50", got)
	}
}

func TestRecoveryIsFirstAnswerAfterUp(t *testing.T) {
	t.Parallel()
	reqs := []Request{
		{Start: 90, Dur: 50, Status: 200},   // started before the host came back
		{Start: 110, Dur: 5, Refused: true}, // refused: no answer
		{Start: 120, Dur: 30, Status: 200},  // answered at 150
		{Start: 130, Dur: 5, Status: 200},   // answered at 135: the first answer
	}
	if d, ok := recovery(reqs, 100, 1000); !ok || d != 35 {
		t.Fatalf("recovery = %d, %v; want 35", d, ok)
	}
	if _, ok := recovery(reqs, 100, 115); ok {
		t.Fatal("found a recovery with no answer before the next outage")
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	ds := []time.Duration{5, 1, 3, 2, 4}
	if Quantile(ds, 0.5) != 3 || Quantile(ds, 1) != 5 || Quantile(ds, 0) != 1 || Quantile(nil, 0.5) != 0 {
		t.Fatal("wrong quantiles")
	}
	if ds[0] != 5 {
		t.Fatal("Quantile sorted its argument")
	}
}
