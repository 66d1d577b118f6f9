package fleet

import (
	"testing"
	"time"
)

func TestScheduleUp(t *testing.T) {
	t.Parallel()
	s := Schedule{{From: 10, To: 20, Hang: true}, {From: 30, To: Forever}}
	for _, c := range []struct {
		at   time.Duration
		up   bool
		hang bool
	}{
		{0, true, false}, {9, true, false}, {10, false, true}, {19, false, true},
		{20, true, false}, {29, true, false}, {30, false, false}, {1 << 60, false, false},
	} {
		o, down := s.At(c.at)
		if s.Up(c.at) != c.up || down == c.up || (down && o.Hang != c.hang) {
			t.Errorf("at %d: up %v (outage %+v), want up %v hang %v", c.at, s.Up(c.at), o, c.up, c.hang)
		}
	}
	if !(Schedule{}).Up(0) {
		t.Error("an empty schedule is down")
	}
}
