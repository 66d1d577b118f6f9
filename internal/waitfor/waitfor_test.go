package waitfor_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	if !waitfor.Until(5*time.Second, func() bool { return n.Load() == 3 }) {
		t.Fatal("Until gave up on a condition that came true")
	}
}

func TestUntilGivesUp(t *testing.T) {
	t.Parallel()
	calls := 0
	start := time.Now()
	if waitfor.Until(30*time.Millisecond, func() bool { calls++; return false }) {
		t.Fatal("Until reported a condition that never held")
	}
	if time.Since(start) < 30*time.Millisecond || calls < 2 {
		t.Fatalf("Until gave up after %v and %d looks", time.Since(start), calls)
	}
}

func TestUntilLooksAtLeastOnce(t *testing.T) {
	t.Parallel()
	if !waitfor.Until(0, func() bool { return true }) {
		t.Fatal("Until with no time did not look at the condition")
	}
}

// fakeTB records a failure instead of ending the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
}

func TestTrueFailsTheTest(t *testing.T) {
	t.Parallel()
	tb := &fakeTB{TB: t}
	waitfor.True(tb, time.Millisecond, "the sweeper ran", func() bool { return false })
	if tb.failed == "" {
		t.Fatal("True did not fail the test")
	}
	tb = &fakeTB{TB: t}
	waitfor.True(tb, time.Second, "the sweeper ran", func() bool { return true })
	if tb.failed != "" {
		t.Fatal("True failed a test whose condition held")
	}
}

func ExampleUntil() {
	var done atomic.Bool
	go done.Store(true)
	fmt.Println(waitfor.Until(time.Second, done.Load))
	// Output: true
}
