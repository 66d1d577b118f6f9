package budget

import (
	"sort"
	"time"
)

// CounterKey names one usage counter.
type CounterKey struct {
	Day   time.Time
	Scope string
	Kind  Kind
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
func LedgerKeys(batch []StoreAdmitParams) (counters []CounterKey, slots []string) {
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

// Ledger decides a batch of admissions against counters and pacing slots
// that a store has loaded (and locked). Store implementations use it so that
// every engine decides exactly alike; it is not safe for concurrent use.
//
// A store loads every key LedgerKeys names (Put) and, if it keeps the
// settings record, the settings generation (PutSettings), calls Admit for each
// admission in order, then writes back Counters and Slots and the admitted
// grants, all in one transaction.
type Ledger struct {
	counters map[CounterKey]*ledgerCounter
	slots    map[string]*ledgerSlot
	gen      int64
	checkGen bool
}

type ledgerCounter struct {
	used   int64
	closed bool
	dirty  bool
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
// is loaded with its initial value; see Store.BudgetAdmit).
func (l *Ledger) PutCounter(k CounterKey, used int64, closed bool) {
	l.counters[k] = &ledgerCounter{used: used, closed: closed}
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

// Admit decides one admission as Store.BudgetAdmit describes and applies it
// to the ledger. Counters and slots it was not given count as zero.
func (l *Ledger) Admit(p StoreAdmitParams) StoreAdmitResult {
	if l.checkGen && p.Settings != l.gen {
		return StoreAdmitResult{Refused: -1, Stale: true}
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
		if c.Limited && (lc.closed || lc.used+c.Cost > c.Limit) {
			return StoreAdmitResult{Refused: i, Used: lc.used, Closed: lc.closed}
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
				return StoreAdmitResult{Refused: -1, Slot: slot}
			}
			s.next, s.dirty = slot.Add(p.Pace), true
		}
	}
	for i, c := range p.Charges {
		cs[i].used += c.Cost
		cs[i].dirty = true
	}
	return StoreAdmitResult{Admitted: true, Refused: -1, Slot: slot}
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
