package storeclock

import (
	"testing"
	"time"
)

type shared struct{ t time.Time }

func (s shared) ClusterNow() time.Time { return s.t }

func TestOr(t *testing.T) {
	mine := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	theirs := time.Date(2002, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := Or(func() time.Time { return mine }, shared{theirs})(); !got.Equal(mine) {
		t.Errorf("a set clock gave %v; want it to win, %v", got, mine)
	}
	if got := Or(nil, shared{theirs})(); !got.Equal(theirs) {
		t.Errorf("a store's cluster clock gave %v; want %v", got, theirs)
	}
	if got := Or(nil, struct{}{})(); time.Since(got) > time.Minute || got.Year() < 2020 {
		t.Errorf("a store without a clock gave %v; want time.Now", got)
	}
}
