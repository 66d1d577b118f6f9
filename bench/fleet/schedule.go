package fleet

import (
	"sort"
	"time"
)

// Forever is the end of an outage that never ends.
const Forever = time.Duration(1<<63 - 1)

// Outage is a span of a run, [From, To), during which a host does not answer.
// Hang says how: accept connections and stay silent (true), or refuse them.
type Outage struct {
	From, To time.Duration
	Hang     bool
}

// Schedule is a host's outages, sorted and disjoint, as offsets from the
// start of a run. The zero Schedule is a host that is always up.
type Schedule []Outage

// At reports the outage covering the offset at, if any.
func (s Schedule) At(at time.Duration) (Outage, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].To > at })
	if i < len(s) && s[i].From <= at {
		return s[i], true
	}
	return Outage{}, false
}

// Up reports whether the host answers at offset at.
func (s Schedule) Up(at time.Duration) bool {
	_, down := s.At(at)
	return !down
}
