// Package waitfor waits in tests for a condition that work on other
// goroutines brings about, where there is no event to wait on: a
// background sweep, a leader's loop, a handler that finishes after its
// client. Where a channel, a fake clock or testing/synctest can say when
// the work is done, use those instead.
package waitfor

import (
	"testing"
	"time"
)

// Longest pause between two looks at the condition: short enough that a
// test waits little past the moment it holds, long enough not to spin on
// a machine that many test processes share.
const maxPause = 20 * time.Millisecond

// Until calls cond until it reports true and then returns true, or
// returns false once within has passed without it. cond is called at
// least once, and once more at the end of the wait.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, maxPause)
	}
}

// True is Until for a condition the test needs: when cond has not held
// within the time given, the test fails, saying what did not happen.
func True(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf("after %v: %s", within, what)
	}
}
