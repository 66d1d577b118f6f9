package health_test

import (
	"testing"
	"time"
)

func TestLogsFromTheFourthConsecutiveFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	failing := func() int {
		var c int
		for _, l := range b.logs.lines(t) {
			if l["name"] == "down.example" && l["level"] == "WARN" {
				c++
			}
		}
		return c
	}
	for i := 1; i <= 3; i++ {
		touch(t, b.tr, "Down.Example", false)
		if c := failing(); c != 0 {
			t.Fatalf("%d log lines after %d failures; want none below 4", c, i)
		}
	}
	for i := 4; i <= 6; i++ {
		touch(t, b.tr, "down.example", false)
		if c := failing(); c != i-3 {
			t.Fatalf("%d log lines after %d failures; want %d", c, i, i-3)
		}
	}
	last := b.logs.lines(t)
	l := last[len(last)-1]
	if l["consecutive_fails"] != float64(6) || l["backoff"] != float64(300*time.Second) {
		t.Fatalf("6th failure logged %v; want consecutive_fails 6, backoff 300s", l)
	}
	touch(t, b.tr, "down.example", true)
	for range 3 {
		touch(t, b.tr, "down.example", false)
	}
	if c := failing(); c != 3 {
		t.Fatalf("a new streak of 3 after a success logged; %d lines, want still 3", c)
	}
	touch(t, b.tr, "down.example", false)
	if c := failing(); c != 4 {
		t.Fatalf("4th failure of the new streak: %d lines, want 4", c)
	}
}
