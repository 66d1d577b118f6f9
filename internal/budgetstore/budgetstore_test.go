package budgetstore_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/budget/budgetdriver"
	"github.com/hostguard/hostguard/internal/budgetstore"
)

func TestLedgerKeysAreUniqueAndInLockOrder(t *testing.T) {
	d1 := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	d2 := d1.AddDate(0, 0, 1)
	c := func(scope string, k budgetdriver.Kind) budgetdriver.Charge {
		return budgetdriver.Charge{Scope: scope, Kind: k, Cost: 1}
	}
	batch := []budgetdriver.AdmitParams{
		{Day: d2, Charges: []budgetdriver.Charge{c("b", budgetdriver.Kind(budget.KindSearch)), c("", budgetdriver.CounterTotal)}, PaceKey: "b"},
		{Day: d1, Charges: []budgetdriver.Charge{c("b", budgetdriver.Kind(budget.KindSearch)), c("a", budgetdriver.CounterSource)}, PaceKey: "a"},
		{Day: d2, Charges: []budgetdriver.Charge{c("b", budgetdriver.Kind(budget.KindSearch))}, PaceKey: "b"},
	}
	keys, slots := budgetstore.LedgerKeys(batch)
	want := []budgetstore.CounterKey{
		{Day: d1, Scope: "a", Kind: budgetdriver.CounterSource},
		{Day: d1, Scope: "b", Kind: budgetdriver.Kind(budget.KindSearch)},
		{Day: d2, Scope: "", Kind: budgetdriver.CounterTotal},
		{Day: d2, Scope: "b", Kind: budgetdriver.Kind(budget.KindSearch)},
	}
	if !reflect.DeepEqual(keys, want) || !reflect.DeepEqual(slots, []string{"a", "b"}) {
		t.Fatalf("keys %v, slots %v; want %v, [a b]", keys, slots, want)
	}
}

// Admissions in one batch see each other, exactly as if each were its own
// transaction.
func TestLedgerDecidesABatchInOrder(t *testing.T) {
	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	day := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	key := budgetstore.CounterKey{Day: day, Scope: "s", Kind: budgetdriver.CounterSource}
	l := budgetstore.NewLedger()
	l.PutCounter(key, 8, time.Time{})
	l.PutSlot("s", time.Time{})
	p := budgetdriver.AdmitParams{Day: day, Now: now, Charges: []budgetdriver.Charge{{Scope: "s", Kind: budgetdriver.CounterSource, Cost: 1, Limited: true, Limit: 10}}}
	paced := p
	paced.PaceKey, paced.Pace, paced.MaxWait = "s", time.Second, 10*time.Second

	steps := []struct {
		p        budgetdriver.AdmitParams
		admitted bool
		refused  int
		slot     time.Time
	}{
		{paced, true, -1, now},
		{paced, true, -1, now.Add(time.Second)}, // queued behind the first
		{p, false, 0, time.Time{}},              // 10 of 10 used
	}
	for i, s := range steps {
		r := l.Admit(s.p)
		if r.Admitted != s.admitted || r.Refused != s.refused || !r.Slot.Equal(s.slot) {
			t.Fatalf("step %d: %+v; want admitted %v, refused %d, slot %v", i, r, s.admitted, s.refused, s.slot)
		}
	}
	if cs := l.Counters(); len(cs) != 1 || cs[0].Used != 10 || cs[0].CounterKey != key {
		t.Fatalf("counters to write %+v; want s/source at 10", cs)
	}
	if ss := l.Slots(); len(ss) != 1 || !ss[0].Next.Equal(now.Add(2*time.Second)) {
		t.Fatalf("slots to write %+v; want s at now+2s", ss)
	}
	// A refusal writes nothing.
	l2 := budgetstore.NewLedger()
	l2.PutCounter(key, 10, time.Time{})
	if r := l2.Admit(p); r.Admitted || r.Used != 10 || len(l2.Counters()) != 0 {
		t.Fatalf("refusal %+v changed %v", r, l2.Counters())
	}
	l2.PutCounter(key, 0, now.Add(time.Second))
	if r := l2.Admit(p); r.Admitted || !r.Closed {
		t.Fatalf("closed counter %+v; want refused as closed", r)
	}
}

func TestAdjustStaysInRange(t *testing.T) {
	const max = budget.MaxAmount
	const huge = int64(^uint64(0) >> 1) // math.MaxInt64
	cases := []struct{ used, delta, want int64 }{
		{0, 1, 1},
		{5, -3, 2},
		{5, -7, 0},
		{max - 1, 1, max},
		{max, 1, max},
		{max, huge, max},
		{huge, huge, max},
		{-huge - 1, -huge - 1, 0},
		{-5, 3, 3}, // a stored negative (older versions) reads as 0
		{huge, -1, max - 1},
	}
	for _, c := range cases {
		if got := budgetstore.Adjust(c.used, c.delta); got != c.want {
			t.Errorf("Adjust(%d, %d) = %d; want %d", c.used, c.delta, got, c.want)
		}
	}
	if d := budgetstore.SettleDelta(1, huge); d != max-1 {
		t.Errorf("SettleDelta(1, MaxInt64) = %d; want %d", d, max-1)
	}
	if d := budgetstore.SettleDelta(-huge-1, huge); d != max {
		t.Errorf("SettleDelta(MinInt64, MaxInt64) = %d; want %d", d, max)
	}
}

func TestLedgerChecksSumsWithoutOverflow(t *testing.T) {
	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	day := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	const huge = int64(^uint64(0) >> 1)
	key := budgetstore.CounterKey{Day: day, Scope: "s", Kind: budgetdriver.CounterSource}
	l := budgetstore.NewLedger()
	l.PutCounter(key, 10, time.Time{})
	// used + Cost wraps negative in int64; the check must still refuse.
	limited := budgetdriver.AdmitParams{Day: day, Now: now, Charges: []budgetdriver.Charge{{Scope: "s", Kind: budgetdriver.CounterSource, Cost: huge, Limited: true, Limit: budget.MaxAmount}}}
	if r := l.Admit(limited); r.Admitted || r.Refused != 0 {
		t.Fatalf("a cost of MaxInt64 under a limit %+v; want refused", r)
	}
	recorded := budgetdriver.AdmitParams{Day: day, Now: now, Charges: []budgetdriver.Charge{{Scope: "s", Kind: budgetdriver.CounterSource, Cost: huge}}}
	for range 3 {
		if r := l.Admit(recorded); !r.Admitted {
			t.Fatalf("record-only charge refused: %+v", r)
		}
	}
	if cs := l.Counters(); len(cs) != 1 || cs[0].Used != budget.MaxAmount {
		t.Fatalf("counters %+v; want s/source stopped at MaxAmount", cs)
	}
}
