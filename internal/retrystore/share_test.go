package retrystore

import "testing"

func TestWakeShare(t *testing.T) {
	t.Parallel()
	steps := []struct {
		spread, done, total, want int64
		why                       string
	}{
		{60, 0, 100, 0, "the first item starts the spread"},
		{60, 50, 100, 30, "halfway through the items, halfway through the spread"},
		{60, 99, 100, 59, "the last item, just before the end"},
		{60, 100, 100, 60, "all of them: the end"},
		{60, 130, 100, 60, "items parked after the count stay at the end"},
		{60, 0, 0, 60, "nothing counted: the end"},
	}
	for _, s := range steps {
		if got := WakeShare(s.spread, s.done, s.total); got != s.want {
			t.Errorf("%s: WakeShare(%d, %d, %d) = %d, want %d", s.why, s.spread, s.done, s.total, got, s.want)
		}
	}
}
