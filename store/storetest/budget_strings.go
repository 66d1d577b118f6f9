package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/internal/clocktest"
)

// testBudgetStrings sends every bad text as every string a Budget takes and
// checks that each is refused with the same error on every engine and that
// nothing reaches the store.
func testBudgetStrings(t *testing.T, newHarness NewFunc) {
	t.Parallel()
	h := newHarness(t)
	st := h.Open(t)
	clk := clocktest.New(budgetT0)
	b := newBudget(t, st, budget.Config{Sources: []budget.Source{{Name: "ok", Pace: budget.NoPace}}, Now: clk.Now})
	settings, err := st.BudgetSettings(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range badTexts {
		calls := []struct {
			field string
			call  func() error
		}{
			{"source", func() error {
				_, err := b.Admit(ctx(t), budget.AdmitParams{Source: bad.s, Kind: budget.KindHeadPoll})
				return err
			}},
			{"source", func() error {
				_, err := b.Admit(ctx(t), budget.AdmitParams{Source: bad.s, Kind: budget.KindForeground})
				return err
			}},
			{"source", func() error {
				_, err := b.Wait(ctx(t), budget.AdmitParams{Source: bad.s, Kind: budget.KindBytes, Cost: 10})
				return err
			}},
			{"name", func() error { return b.SetSource(ctx(t), budget.Source{Name: bad.s}) }},
			{"name", func() error { return b.RemoveSource(ctx(t), bad.s) }},
			{"source", func() error { return b.ReportLimit(ctx(t), bad.s, 10) }},
			{"source", func() error { return b.MarkExhausted(ctx(t), bad.s, time.Time{}) }},
			{"sources[1].name", func() error {
				_, err := budget.New(st, budget.Config{Sources: []budget.Source{{Name: "ok"}, {Name: bad.s}}})
				return err
			}},
		}
		for i, c := range calls {
			err := c.call()
			if want := "budget: " + c.field + ": " + bad.reason; err == nil || err.Error() != want || !errors.Is(err, budget.ErrInvalid) {
				t.Errorf("%s, call %d: %v; want %q matching ErrInvalid", bad.what, i, err, want)
			}
		}
	}
	if cs := usageList(t, st); len(cs) != 0 {
		t.Errorf("refused calls stored counters: %+v", cs)
	}
	if after, err := st.BudgetSettings(ctx(t)); err != nil || after.Generation != settings.Generation {
		t.Errorf("refused calls changed the settings: generation %d -> %d (%v)", settings.Generation, after.Generation, err)
	}
}
