// Package storeclock picks a capability's clock when its Config leaves Now
// unset: a store shared by several nodes offers one clock for all of them
// (store/postgres: the database's), so that the nodes' own clocks, which
// may disagree or jump, decide nothing that another node reads.
package storeclock

import "time"

// Clock is implemented by a store that keeps a clock for every node that
// shares it.
type Clock interface {
	// ClusterNow is the cluster's time: the same on every node to within a
	// few milliseconds, whatever the node's own clock says.
	ClusterNow() time.Time
}

// Or returns now when it is set, else st's cluster clock when st has one,
// else time.Now (a store of one node, where the node's clock is the only
// one).
func Or(now func() time.Time, st any) func() time.Time {
	if now != nil {
		return now
	}
	if c, ok := st.(Clock); ok {
		return c.ClusterNow
	}
	return time.Now
}
