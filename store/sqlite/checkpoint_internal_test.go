package sqlite

import (
	"testing"
	"time"
)

func TestCheckpointsSpaceOutWhileIdle(t *testing.T) {
	wait := checkpointEvery
	var waits []time.Duration
	for range 6 {
		wait = nextCheckpointWait(wait, true)
		waits = append(waits, wait)
	}
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, checkpointIdle, checkpointIdle}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("idle waits %v, want %v", waits, want)
		}
	}
	if got := nextCheckpointWait(checkpointIdle, false); got != checkpointEvery {
		t.Fatalf("after a write: %v, want %v", got, checkpointEvery)
	}
}
