package storetest

import (
	"errors"
	"math"
	"testing"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/budget/budgetdriver"
	"github.com/hostguard/hostguard/internal/clocktest"
)

// testBudgetLimits feeds the largest figures a caller can send to a Budget
// and to the store directly, and checks that the day's counters stay
// readable integers within 0..MaxAmount on the engine and that the report
// adds up without wrapping.
func testBudgetLimits(t *testing.T, newHarness NewFunc) {
	t.Run("extreme figures never wrap, fractionalise or break a counter", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		st := h.Open(t)
		clk := clocktest.New(budgetT0)
		huge := func(name string) budget.Source {
			return budget.Source{Name: name, OwnerDailyLimit: budget.Int(budget.MaxAmount), Share: budget.ShareUnlimited,
				ReservePercent: budget.Int(0), Pace: budget.NoPace}
		}
		b := newBudget(t, st, budget.Config{
			Sources: []budget.Source{huge("a"), huge("b"), huge("c")},
			Limits:  budget.Limits{Bytes: budget.Int(budget.MaxAmount), Validation: budget.Int(budget.MaxAmount)},
			Now:     clk.Now,
		})

		// Figures past the maxima are refused before the store, naming
		// the field.
		wantInput := func(what, field string, err error) {
			t.Helper()
			var ie *budget.InputError
			if !errors.As(err, &ie) || ie.Field != field {
				t.Errorf("%s: %v; want an InputError for %s", what, err, field)
			}
		}
		_, err := b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindValidation, Cost: math.MaxInt64})
		wantInput("cost 2^63-1", "cost", err)
		_, err = b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindForeground, Cost: budget.MaxAmount + 1})
		wantInput("foreground cost above MaxAmount", "cost", err)
		wantInput("owner_daily_limit 2^63-1", "owner_daily_limit",
			b.SetSource(ctx(t), budget.Source{Name: "d", OwnerDailyLimit: budget.Int(math.MaxInt64)}))
		wantInput("total 2^63-1", "total", b.SetLimits(ctx(t), budget.Limits{Total: budget.Int(math.MaxInt64)}))
		wantInput("reported limit 2^63-1", "reported_daily_limit", b.ReportLimit(ctx(t), "a", math.MaxInt64))

		// The largest accepted figures: a whole day's allowance in one
		// admission, then nothing more; record-only figures stop at the
		// maximum.
		// (A head poll: gap pages and searches leave room for the day's
		// head polls.)
		if _, err := b.Admit(ctx(t), budget.AdmitParams{Source: "a", Kind: budget.KindHeadPoll, Cost: budget.MaxAmount}); err != nil {
			t.Fatalf("a head poll costing the whole allowance: %v", err)
		}
		if _, err := b.Admit(ctx(t), budget.AdmitParams{Source: "a", Kind: budget.KindSearch}); !errors.Is(err, budget.ErrExhausted) {
			t.Fatalf("one more search: %v; want exhausted", err)
		}
		for range 3 {
			if _, err := b.Admit(ctx(t), budget.AdmitParams{Source: "b", Kind: budget.KindForeground, Cost: budget.MaxAmount}); err != nil {
				t.Fatalf("foreground at MaxAmount: %v", err)
			}
		}
		if _, err := b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindValidation, Cost: budget.MaxAmount}); err != nil {
			t.Fatalf("validation at MaxAmount: %v", err)
		}
		if _, err := b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindValidation}); !errors.Is(err, budget.ErrExhausted) {
			t.Fatalf("validation past MaxAmount: %v; want exhausted", err)
		}

		// Bytes: settling at the most, and past it, twice over.
		g1, err := b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindBytes, Cost: 1, Source: "c"})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Settle(ctx(t), g1.ID, budget.MaxAmount); err != nil {
			t.Fatalf("settle at MaxAmount: %v", err)
		}
		wantInput("settle at 2^63-1", "actual", b.Settle(ctx(t), g1.ID, math.MaxInt64))
		// A second reservation cannot be admitted any more: the first
		// took the whole day. At the store, settle a grant stored by hand
		// with the most a caller of the store could send.
		if _, err := b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindBytes, Cost: 1}); !errors.Is(err, budget.ErrExhausted) {
			t.Fatalf("bytes after settling at MaxAmount: %v; want exhausted", err)
		}
		raw := &budgetdriver.Grant{ID: "g_00000000000000000000000000000002", Day: budgetDay, Source: "c", Kind: budgetdriver.Kind(budget.KindBytes), Cost: 1, CreatedAt: budgetT0}
		rs, err := st.BudgetAdmit(ctx(t), []budgetdriver.AdmitParams{{Day: budgetDay, Now: budgetT0,
			Charges: []budgetdriver.Charge{{Scope: "", Kind: budgetdriver.Kind(budget.KindBytes), Cost: 1}, {Scope: "c", Kind: budgetdriver.Kind(budget.KindBytes), Cost: 1}}, Grant: raw}})
		if err != nil || !rs[0].Admitted {
			t.Fatalf("store admit: %+v, %v", rs, err)
		}
		if _, err := st.BudgetSettle(ctx(t), budgetdriver.SettleParams{ID: raw.ID, Actual: math.MaxInt64, Today: budgetDay, Now: budgetT0}); err != nil {
			t.Fatalf("store settle at 2^63-1: %v", err)
		}
		// A record-only charge of 2^63-1 straight to the store, and a
		// refund larger than the counter.
		rs, err = st.BudgetAdmit(ctx(t), []budgetdriver.AdmitParams{{Day: budgetDay, Now: budgetT0,
			Charges: []budgetdriver.Charge{{Scope: "b", Kind: budgetdriver.Kind(budget.KindForeground), Cost: math.MaxInt64}}}})
		if err != nil || !rs[0].Admitted {
			t.Fatalf("store record-only at 2^63-1: %+v, %v", rs, err)
		}
		if err := st.BudgetCancel(ctx(t), budgetdriver.CancelParams{Day: budgetDay,
			Charges: []budgetdriver.Charge{{Scope: "a", Kind: budgetdriver.Kind(budget.KindGapPage), Cost: math.MaxInt64}}}); err != nil {
			t.Fatalf("store cancel: %v", err)
		}

		// Every stored counter is readable and within range, on every
		// handle.
		for _, c := range usageList(t, h.Open(t)) {
			if c.Used < 0 || c.Used > budget.MaxAmount {
				t.Errorf("stored counter %s/%s = %d; want 0..MaxAmount", c.Scope, c.Kind, c.Used)
			}
		}
		u := usage(t, st, budgetDay)
		for k, want := range map[string]int64{
			"a/source": budget.MaxAmount, "a/head_poll": budget.MaxAmount, "b/foreground": budget.MaxAmount,
			"/foreground": budget.MaxAmount, "/validation": budget.MaxAmount, "/bytes": budget.MaxAmount, "c/bytes": budget.MaxAmount,
		} {
			if u[k].Used != want {
				t.Errorf("counter %s = %d; want %d", k, u[k].Used, want)
			}
		}

		// The day's report adds three maximal allowances without going
		// negative, and every figure stays in range.
		rep, err := b.Report(ctx(t))
		if err != nil {
			t.Fatalf("report: %v", err)
		}
		if rep.Total.Allowance != budget.MaxAmount || rep.Total.Used != budget.MaxAmount || rep.Total.Remaining != 0 {
			t.Errorf("total %+v; want allowance and used stopped at MaxAmount, nothing remaining", rep.Total)
		}
		lines := append([]budget.Line{rep.Total}, rep.Kinds...)
		for _, s := range rep.Sources {
			if s.Allowance != budget.MaxAmount {
				t.Errorf("source %s allowance %d; want MaxAmount", s.Name, s.Allowance)
			}
			lines = append(lines, budget.Line{Kind: budget.Kind(s.Name), Used: s.Used, Allowance: s.Allowance, Remaining: s.Remaining})
			lines = append(lines, s.Kinds...)
		}
		for _, l := range lines {
			for _, v := range []int64{l.Used, l.Allowance, l.Remaining} {
				if v < 0 || v > budget.MaxAmount {
					t.Errorf("report line %+v out of 0..MaxAmount", l)
				}
			}
		}
		// Admission still answers: nothing is left of what was used up,
		// and an untouched source still has its allowance.
		if _, err := b.Admit(ctx(t), budget.AdmitParams{Source: "c", Kind: budget.KindHeadPoll}); err != nil {
			t.Errorf("head poll on an untouched source: %v", err)
		}
	})
}

func usageList(t testing.TB, st budget.Store) []budgetdriver.Counter {
	t.Helper()
	cs, err := st.BudgetUsage(ctx(t), budgetDay)
	if err != nil {
		t.Fatalf("read usage: %v", err)
	}
	return cs
}
