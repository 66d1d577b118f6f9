package clocktest_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/clocktest"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	c := clocktest.New(start)
	steps := []struct {
		what string
		move func()
		want time.Time
	}{
		{"new", func() {}, start},
		{"still", func() { time.Sleep(time.Millisecond) }, start},
		{"advance", func() { c.Advance(90 * time.Second) }, start.Add(90 * time.Second)},
		{"advance zero", func() { c.Advance(0) }, start.Add(90 * time.Second)},
		{"advance back", func() { c.Advance(-time.Hour) }, start.Add(90*time.Second - time.Hour)},
		{"set", func() { c.Set(start.Add(24 * time.Hour)) }, start.Add(24 * time.Hour)},
		{"set back", func() { c.Set(start) }, start},
	}
	for _, s := range steps {
		s.move()
		if got := c.Now(); !got.Equal(s.want) || got.Location() != s.want.Location() {
			t.Fatalf("%s: Now() = %v, want %v", s.what, got, s.want)
		}
	}
}

func TestZeroClockReadsZeroTime(t *testing.T) {
	t.Parallel()
	var c clocktest.Clock
	if !c.Now().IsZero() {
		t.Fatalf("zero Clock reads %v", c.Now())
	}
	c.Advance(time.Second)
	if got := c.Now(); !got.Equal(time.Time{}.Add(time.Second)) {
		t.Fatalf("after Advance(1s): %v", got)
	}
}

// TestConcurrentUse is for the race detector: readers and movers at once,
// and no advance is lost.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	c := clocktest.New(start)
	const movers, moves = 4, 100
	var wg sync.WaitGroup
	for range movers {
		wg.Go(func() {
			for range moves {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(movers*moves*time.Millisecond); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
}

func Example() {
	c := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	now := c.Now // what a Config's Now field takes
	c.Advance(90 * time.Minute)
	fmt.Println(now().Format(time.Kitchen))
	c.Set(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	fmt.Println(now().Format(time.DateTime))
	// Output:
	// 1:30PM
	// 2026-03-02 00:00:00
}
