package reliability

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// tolerance absorbs the stores' time precision (microseconds) and the
// rounding of lease lengths; a real overlap is a whole request apart.
const tolerance = time.Millisecond

// failQuiet is how long an item is certainly not due after an acknowledged
// failure: the first step of the default ladder (30 minutes) less its
// ±10 % jitter, with a margin.
const failQuiet = 25 * time.Minute

// addRec is one acknowledged POST /v1/items.
type addRec struct {
	ids    []string
	worker int
	cycle  int
	acked  time.Time
}

// leaseRec is everything a worker learnt about one lease it was granted.
// Times are the worker's clock, which is the daemons' clock too (one
// machine).
type leaseRec struct {
	item, token string
	worker      int
	cycle       int // cycle in which the claim was acknowledged
	attempt     int
	length      time.Duration // the lease length asked for
	claimSent   time.Time
	claimAcked  time.Time
	firstUntil  time.Time // Until of the claim
	until       time.Time // the latest acknowledged end (claim or extend)

	// The settlement (succeed or fail), if the worker tried one.
	op          string
	opSent      time.Time // first attempt; the daemon applied it no earlier
	opAcked     bool
	opAckedAt   time.Time
	opCycle     int       // cycle of the acknowledgement
	lostAckedAt time.Time // a 409 lease-lost answer to any operation
	lostOp      string
	lostCycle   int
	extends     int // acknowledged extensions
}

// start is when the daemon granted the lease: the claim computes Until as
// its now plus the length.
func (l *leaseRec) start() time.Time { return l.firstUntil.Add(-l.length) }

// end is the latest moment up to which the lease certainly stayed valid:
// the first attempt of an acknowledged settlement (a late one included:
// the daemon honours an expired lease until the item is claimed again, so
// nobody may have claimed it before), else the latest acknowledged end,
// cut to an unacknowledged settlement's first attempt, which may have
// ended it early.
func (l *leaseRec) end() time.Time {
	if l.opAcked {
		return l.opSent
	}
	if !l.opSent.IsZero() && l.opSent.Before(l.until) {
		return l.opSent
	}
	return l.until
}

func (l *leaseRec) String() string {
	s := fmt.Sprintf("lease %s by worker %d (claimed in cycle %d, attempt %d, %s to %s",
		l.token, l.worker, l.cycle, l.attempt, clock(l.start()), clock(l.end()))
	if l.extends > 0 {
		s += fmt.Sprintf(", first until %s, extended %d times", clock(l.firstUntil), l.extends)
	}
	if l.op != "" {
		s += fmt.Sprintf(", %s sent %s", l.op, clock(l.opSent))
		if l.opAcked {
			s += " acknowledged " + clock(l.opAckedAt)
		}
	}
	if !l.lostAckedAt.IsZero() {
		s += fmt.Sprintf(", %s answered lease lost at %s", l.lostOp, clock(l.lostAckedAt))
	}
	return s + ")"
}

func clock(t time.Time) string { return t.Format("15:04:05.000000") }

// finalItem is an item as GET /v1/items/{id} shows it after the last
// restart.
type finalItem struct {
	found      bool
	State      string    `json:"state"`
	Attempts   int       `json:"attempts"`
	Failures   int       `json:"failures"`
	NextAt     time.Time `json:"next_at"`
	LeaseUntil time.Time `json:"lease_until"`
}

// violation is one broken promise, with what the test knows about it.
type violation struct {
	kind  string // "lost add", "overlap", ...
	cycle int
	item  string
	what  string
}

func (v violation) String() string {
	return fmt.Sprintf("%s: cycle %d: item %s: %s", v.kind, v.cycle, v.item, v.what)
}

// history is what all workers logged in one scenario.
type history struct {
	adds   []addRec
	leases []*leaseRec
}

// ids lists every item the history mentions, sorted.
func (h *history) ids() []string {
	seen := map[string]bool{}
	for _, a := range h.adds {
		for _, id := range a.ids {
			seen[id] = true
		}
	}
	for _, l := range h.leases {
		seen[l.item] = true
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// reclaims counts acknowledged leases on items that had an acknowledged
// lease before: the pairs the overlap check compares.
func (h *history) reclaims() int {
	seen := map[string]bool{}
	n := 0
	for _, l := range h.leases {
		if seen[l.item] {
			n++
		}
		seen[l.item] = true
	}
	return n
}

// check compares the history with the final state of every item (keyed by
// id, read after the workers stopped at end) and returns every violation.
func (h *history) check(final map[string]finalItem, end time.Time) []violation {
	var vs []violation
	add := func(kind string, cycle int, item, format string, args ...any) {
		vs = append(vs, violation{kind: kind, cycle: cycle, item: item, what: fmt.Sprintf(format, args...)})
	}

	// Every acknowledged add exists.
	for _, a := range h.adds {
		for _, id := range a.ids {
			if !final[id].found {
				add("lost add", a.cycle, id, "added by worker %d at %s, acknowledged, gone after the restarts", a.worker, clock(a.acked))
			}
		}
	}

	byItem := map[string][]*leaseRec{}
	for _, l := range h.leases {
		byItem[l.item] = append(byItem[l.item], l)
	}
	items := make([]string, 0, len(byItem))
	for id := range byItem {
		items = append(items, id)
	}
	sort.Strings(items)
	for _, id := range items {
		ls := byItem[id]
		slices.SortStableFunc(ls, func(a, b *leaseRec) int { return a.start().Compare(b.start()) })
		f := final[id]
		if !f.found {
			add("lost claim", ls[0].cycle, id, "%v was acknowledged, the item is gone after the restarts", ls[0])
			continue
		}
		for i, l := range ls {
			// The daemon computes Until from its clock during the claim.
			if l.start().Before(l.claimSent.Add(-tolerance)) || l.start().After(l.claimAcked.Add(tolerance)) {
				add("bad lease", l.cycle, id, "%v: until %s minus the %v asked for is outside the claim's request (%s to %s)",
					l, clock(l.firstUntil), l.length, clock(l.claimSent), clock(l.claimAcked))
			}
			if !l.lostAckedAt.IsZero() && l.lostAckedAt.Before(l.until.Add(-tolerance)) {
				add("lease lost early", l.lostCycle, id, "%v: %s answered lease lost at %s, before the acknowledged end %s",
					l, l.lostOp, clock(l.lostAckedAt), clock(l.until))
			}
			if l.opAcked {
				switch l.op {
				case "succeed":
					if f.State != "done" {
						add("lost succeed", l.opCycle, id, "%v: succeed acknowledged at %s; after the restarts the item is %s", l, clock(l.opAckedAt), f.State)
					}
				case "fail":
					if f.State != "scheduled" && i == len(ls)-1 {
						add("lost fail", l.opCycle, id, "%v: fail acknowledged at %s; after the restarts the item is %s", l, clock(l.opAckedAt), f.State)
					}
				}
			}
			if i > 0 && l.attempt <= ls[i-1].attempt {
				add("lost claim", l.cycle, id, "%v follows %v with attempt %d after %d: the earlier acknowledged claim was forgotten",
					l, ls[i-1], l.attempt, ls[i-1].attempt)
			}
			for _, prev := range ls[:i] {
				if l.start().Before(prev.end().Add(-tolerance)) {
					add("overlap", l.cycle, id, "%v began while %v was still valid", l, prev)
				}
				if prev.opAcked && prev.op == "succeed" {
					add("returned", l.cycle, id, "%v handed out an item whose %v had succeeded (acknowledged at %s)", l, prev, clock(prev.opAckedAt))
				}
				if prev.opAcked && prev.op == "fail" && l.start().Before(prev.opSent.Add(failQuiet)) {
					add("returned", l.cycle, id, "%v handed out an item whose %v had failed at %s; it was not due for 30 minutes",
						l, prev, clock(prev.opSent))
				}
			}
		}
		if n := ls[len(ls)-1].attempt; f.Attempts < n {
			add("lost claim", ls[len(ls)-1].cycle, id, "acknowledged claims reached attempt %d; after the restarts the item counts %d", n, f.Attempts)
		}
		// A lease still running when the workers stopped, never settled,
		// is still held, with at least its acknowledged end.
		last := ls[len(ls)-1]
		if last.opSent.IsZero() && last.lostAckedAt.IsZero() && last.until.After(end.Add(tolerance)) {
			if f.State != "leased" || f.LeaseUntil.Before(last.until.Add(-tolerance)) {
				add("lost extend", last.cycle, id, "%v (extended %d times) should run to %s; after the restarts the item is %s until %s",
					last, last.extends, clock(last.until), f.State, clock(f.LeaseUntil))
			}
		}
	}
	return vs
}

// summarize groups violations by kind and shows the first few of each.
func summarize(vs []violation, perKind int) string {
	byKind := map[string][]violation{}
	var kinds []string
	for _, v := range vs {
		if byKind[v.kind] == nil {
			kinds = append(kinds, v.kind)
		}
		byKind[v.kind] = append(byKind[v.kind], v)
	}
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "%d × %s\n", len(byKind[k]), k)
		for i, v := range byKind[k] {
			if i == perKind {
				fmt.Fprintf(&b, "  ...\n")
				break
			}
			fmt.Fprintf(&b, "  %v\n", v)
		}
	}
	return b.String()
}
