package guard

import (
	"slices"
	"strings"
	"time"

	"github.com/hostguard/hostguard/failure"
)

// EndpointStatus is a snapshot of one endpoint record, for status pages and
// listings.
type EndpointStatus struct {
	Endpoint      string        // the key
	State         State         // as State would report it
	Failures      int           // counted host-level failures since the record last cleared
	OpenedAt      time.Time     // start of the current or last open period; zero when closed
	OpenUntil     time.Time     // end of the current or last open period; zero when closed
	RetryAfter    time.Duration // time left in the open period; zero unless Open
	TicketsOut    int           // tickets admitted and not yet settled
	TrialOut      bool          // the half-open trial slot is taken
	Probing       bool          // the trial slot is held by the guard's own probe
	LastFailure   failure.Class // class of the last counted failure; None if there was none
	LastFailureAt time.Time     // when it was counted; zero if never
	Epoch         uint64        // how many times Reset was called on the record
	Openings      int           // openings in a row without an answer or Reset; 0 when closed
}

// Endpoints returns a snapshot of every record, sorted by endpoint. It
// locks one record at a time, so it is consistent per endpoint, not
// across endpoints.
func (g *Guard) Endpoints() []EndpointStatus {
	list := make([]EndpointStatus, 0, g.Len())
	for _, ep := range g.snapshot() {
		var tr transitions
		ep.mu.Lock()
		if ep.evicted {
			ep.mu.Unlock()
			continue
		}
		now := g.cfg.Now()
		ep.observe(now, &tr)
		st := EndpointStatus{
			Endpoint:      ep.key,
			State:         ep.state(now),
			Failures:      ep.fails,
			TicketsOut:    int(ep.out.Load()),
			TrialOut:      ep.trial != 0,
			Probing:       ep.probe != nil,
			LastFailure:   ep.last,
			LastFailureAt: ep.lastAt,
			Epoch:         ep.epoch,
			Openings:      ep.openings,
		}
		if ep.open {
			st.OpenedAt, st.OpenUntil = ep.openedAt, ep.openUntil
			st.RetryAfter = max(ep.openUntil.Sub(now), 0)
		}
		ep.mu.Unlock()
		g.report(ep, &tr)
		list = append(list, st)
	}
	slices.SortFunc(list, func(a, b EndpointStatus) int { return strings.Compare(a.Endpoint, b.Endpoint) })
	return list
}
