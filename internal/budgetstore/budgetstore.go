// Package budgetstore holds what the store engines share to implement
// budgetdriver.Store: the decision procedure (Ledger), the lock order of
// counters and pacing slots (LedgerKeys), and the checked arithmetic every
// counter change goes through (Adjust). The engines only load, lock and
// save, so that SQLite and PostgreSQL decide every admission exactly
// alike.
package budgetstore

import (
	"sort"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/budget/budgetdriver"
)

// CounterKey names one usage counter.
type CounterKey struct {
	Day   time.Time
	Scope string
	Kind  budgetdriver.Kind
}

func (a CounterKey) less(b CounterKey) bool {
	if !a.Day.Equal(b.Day) {
		return a.Day.Before(b.Day)
	}
	if a.Scope != b.Scope {
		return a.Scope < b.Scope
	}
	return a.Kind < b.Kind
}

// LedgerKeys returns the counters and pacing slots that batch touches, each
// once, in the order stores must lock them: counters by (Day, Scope, Kind),
// then slots by key. One global order is what keeps concurrent batches from
// deadlocking.
func LedgerKeys(batch []budgetdriver.AdmitParams) (counters []CounterKey, slots []string) {
	seenC := map[CounterKey]bool{}
	seenS := map[string]bool{}
	for _, p := range batch {
		for _, c := range p.Charges {
			k := CounterKey{Day: p.Day, Scope: c.Scope, Kind: c.Kind}
			if !seenC[k] {
				seenC[k] = true
				counters = append(counters, k)
			}
		}
		if p.PaceKey != "" && !seenS[p.PaceKey] {
			seenS[p.PaceKey] = true
			slots = append(slots, p.PaceKey)
		}
	}
	sort.Slice(counters, func(i, j int) bool { return counters[i].less(counters[j]) })
	sort.Strings(slots)
	return counters, slots
}

// Adjust returns used changed by delta, kept within 0..budget.MaxAmount.
// Every counter change an engine makes outside the Ledger (settling,
// cancelling) goes through it, so that no figure a caller sends can make a
// stored counter negative, overflow it, or (on SQLite, which turns an
// overflowing integer into a REAL) make it fractional.
func Adjust(used, delta int64) int64 {
	used = min(max(used, 0), budget.MaxAmount)
	delta = min(max(delta, -budget.MaxAmount), budget.MaxAmount)
	return min(max(used+delta, 0), budget.MaxAmount)
}

// SettleDelta is how settling a reservation of cost at actual changes its
// counters (for Adjust): actual − cost, each first brought within
// 0..budget.MaxAmount so that no pair of figures overflows the difference.
func SettleDelta(cost, actual int64) int64 {
	clamp := func(v int64) int64 { return min(max(v, 0), budget.MaxAmount) }
	return clamp(actual) - clamp(cost)
}

// Ledger decides a batch of admissions against counters and pacing slots
// that a store has loaded (and locked). It is not safe for concurrent use.
//
// A store loads every key LedgerKeys names (PutCounter, PutSlot) and, if it
// keeps the settings record, the settings generation (PutSettings), calls
// Admit for each admission in order, then writes back Counters and Slots
// and the admitted grants, all in one transaction.
type Ledger struct {
	counters map[CounterKey]*ledgerCounter
	slots    map[string]*ledgerSlot
	gen      int64
	checkGen bool
}

type ledgerCounter struct {
	used        int64
	closedUntil time.Time
	dirty       bool
}

type ledgerSlot struct {
	next  time.Time
	dirty bool
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{counters: map[CounterKey]*ledgerCounter{}, slots: map[string]*ledgerSlot{}}
}

// PutCounter loads a counter as stored (a counter that does not exist yet
// is loaded with its initial value; see budgetdriver.Store.BudgetAdmit).
// closedUntil is when the counter's closing ends (zero: open). A stored
// value outside 0..budget.MaxAmount (written by an older version) is read
// as the nearest bound.
func (l *Ledger) PutCounter(k CounterKey, used int64, closedUntil time.Time) {
	l.counters[k] = &ledgerCounter{used: Adjust(used, 0), closedUntil: closedUntil}
}

// PutSlot loads a pacing slot: the first free instant (zero or any past
// time for a source never paced).
func (l *Ledger) PutSlot(key string, next time.Time) {
	l.slots[key] = &ledgerSlot{next: next}
}

// PutSettings loads the stored settings generation: admissions planned
// under another come back Stale. A ledger that was not given one decides
// every admission.
func (l *Ledger) PutSettings(generation int64) {
	l.gen, l.checkGen = generation, true
}

// Admit decides one admission as budgetdriver.Store.BudgetAdmit describes and
// applies it to the ledger. Counters and slots it was not given count as
// zero. Sums are checked: a limited charge is refused when it would pass
// its limit however large the figures, and a recording charge stops at
// budget.MaxAmount.
func (l *Ledger) Admit(p budgetdriver.AdmitParams) budgetdriver.AdmitResult {
	if l.checkGen && p.Settings != l.gen {
		return budgetdriver.AdmitResult{Refused: -1, Stale: true}
	}
	cs := make([]*ledgerCounter, len(p.Charges))
	for i, c := range p.Charges {
		k := CounterKey{Day: p.Day, Scope: c.Scope, Kind: c.Kind}
		lc := l.counters[k]
		if lc == nil {
			lc = &ledgerCounter{}
			l.counters[k] = lc
		}
		cs[i] = lc
		if !c.Limited {
			continue
		}
		closed := lc.closedUntil.After(p.Now)
		// used <= MaxAmount and Limit >= 0, so Limit - used cannot
		// overflow, where used + Cost could.
		if closed || c.Cost < 0 || c.Cost > c.Limit-lc.used {
			r := budgetdriver.AdmitResult{Refused: i, Used: lc.used, Closed: closed}
			if closed {
				r.ClosedUntil = lc.closedUntil
			}
			return r
		}
	}
	slot := p.Now
	if p.PaceKey != "" {
		s := l.slots[p.PaceKey]
		if s == nil {
			s = &ledgerSlot{}
			l.slots[p.PaceKey] = s
		}
		if p.Touch {
			if n := p.Now.Add(p.Pace); n.After(s.next) {
				s.next, s.dirty = n, true
			}
		} else {
			if s.next.After(slot) {
				slot = s.next
			}
			if slot.Sub(p.Now) > p.MaxWait {
				return budgetdriver.AdmitResult{Refused: -1, Slot: slot}
			}
			s.next, s.dirty = slot.Add(p.Pace), true
		}
	}
	for i, c := range p.Charges {
		cs[i].used = Adjust(cs[i].used, c.Cost)
		cs[i].dirty = true
	}
	return budgetdriver.AdmitResult{Admitted: true, Refused: -1, Slot: slot}
}

// CounterValue is a counter's new value, to be written back.
type CounterValue struct {
	CounterKey
	Used int64
}

// Counters returns the counters that admissions changed, in lock order.
func (l *Ledger) Counters() []CounterValue {
	var out []CounterValue
	for k, c := range l.counters {
		if c.dirty {
			out = append(out, CounterValue{CounterKey: k, Used: c.used})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].less(out[j].CounterKey) })
	return out
}

// SlotValue is a pacing slot's new value, to be written back.
type SlotValue struct {
	Key  string
	Next time.Time
}

// Slots returns the pacing slots that admissions moved, by key.
func (l *Ledger) Slots() []SlotValue {
	var out []SlotValue
	for k, s := range l.slots {
		if s.dirty {
			out = append(out, SlotValue{Key: k, Next: s.next})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
