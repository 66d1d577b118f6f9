package storetest

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/budget/budgetdriver"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/storeclock"
)

// budgetT0 is a fixed instant with microsecond detail in the middle of a
// UTC day.
var budgetT0 = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

var budgetDay = time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)

func newBudget(t testing.TB, st budget.Store, cfg budget.Config) *budget.Budget {
	t.Helper()
	b, err := budget.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// budgetNodes opens n handles on one database, each with its own Budget.
func budgetNodes(t *testing.T, h *Harness, n int, cfg budget.Config) []*budget.Budget {
	out := make([]*budget.Budget, n)
	for i := range out {
		out[i] = newBudget(t, h.Open(t), cfg)
	}
	return out
}

// hammer runs goroutines per node that call admit until it reports an
// exhausted allowance (or the bounds run out), and returns every grant.
func hammer(t *testing.T, nodes []*budget.Budget, goroutines int, admit func(b *budget.Budget) (budget.Grant, error)) []budget.Grant {
	t.Helper()
	const maxCalls = 20000 // per goroutine
	deadline := time.Now().Add(60 * time.Second)
	var mu sync.Mutex
	var grants []budget.Grant
	var wg sync.WaitGroup
	for _, b := range nodes {
		for range goroutines {
			wg.Go(func() {
				for range maxCalls {
					if time.Now().After(deadline) {
						t.Error("hammer: time bound reached before the allowance ran out")
						return
					}
					g, err := admit(b)
					switch {
					case err == nil:
						mu.Lock()
						grants = append(grants, g)
						mu.Unlock()
					case errors.Is(err, budget.ErrExhausted):
						return
					case errors.Is(err, budget.ErrPaced):
					default:
						t.Error(err)
						return
					}
				}
				t.Error("hammer: call bound reached before the allowance ran out")
			})
		}
	}
	wg.Wait()
	return grants
}

// assertPaced checks that no two grants are closer than pace.
func assertPaced(t *testing.T, grants []budget.Grant, pace time.Duration) {
	t.Helper()
	sort.Slice(grants, func(i, j int) bool { return grants[i].At.Before(grants[j].At) })
	for i := 1; i < len(grants); i++ {
		if gap := grants[i].At.Sub(grants[i-1].At); gap < pace {
			t.Fatalf("grants %d and %d are %v apart; pace is %v", i-1, i, gap, pace)
		}
	}
}

func usage(t testing.TB, st budget.Store, day time.Time) map[string]budgetdriver.Counter {
	t.Helper()
	cs, err := st.BudgetUsage(ctx(t), day)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]budgetdriver.Counter{}
	for _, c := range cs {
		out[c.Scope+"/"+string(c.Kind)] = c
	}
	return out
}

func testBudget(t *testing.T, newHarness NewFunc) {
	t.Run("exact allowance and pacing across nodes", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		const pace = 2 * time.Millisecond
		// 10 % of 1000: an allowance of 100. Real clocks: the pacing is
		// what is under test.
		nodes := budgetNodes(t, h, 3, budget.Config{Sources: []budget.Source{{Name: "hot", Pace: pace}}})
		grants := hammer(t, nodes, 8, func(b *budget.Budget) (budget.Grant, error) {
			return b.Admit(ctx(t), budget.AdmitParams{Source: "hot", Kind: budget.KindHeadPoll})
		})
		if len(grants) != 100 {
			t.Fatalf("%d grants; want exactly 100", len(grants))
		}
		assertPaced(t, grants, pace)
		day := grants[0].Day
		if u := usage(t, h.Open(t), day); u["hot/source"].Used != 100 || u["hot/head_poll"].Used != 100 {
			t.Fatalf("stored usage %+v; want 100", u)
		}
	})

	t.Run("waiters across nodes share the slots and the allowance", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		const pace = 3 * time.Millisecond
		cfg := budget.Config{Sources: []budget.Source{
			{Name: "hot", Pace: pace, OwnerDailyLimit: budget.Int(300)}, // allowance 30
		}}
		// A slot is a time on the node's budget clock, which on a
		// cluster engine is the database's (storeclock): judge the wait
		// by that clock, not by this process's, which may differ from it
		// by the few microseconds of the anchor's read.
		nodes := make([]*budget.Budget, 3)
		clocks := make(map[*budget.Budget]func() time.Time, len(nodes))
		for i := range nodes {
			st := h.Open(t)
			nodes[i] = newBudget(t, st, cfg)
			clocks[nodes[i]] = storeclock.Or(nil, st)
		}
		var late []string
		var mu sync.Mutex
		grants := hammer(t, nodes, 8, func(b *budget.Budget) (budget.Grant, error) {
			g, err := b.Wait(ctx(t), budget.AdmitParams{Source: "hot", Kind: budget.KindHeadPoll})
			if err == nil && clocks[b]().Before(g.At) {
				mu.Lock()
				late = append(late, fmt.Sprintf("returned before its slot %v", g.At))
				mu.Unlock()
			}
			return g, err
		})
		if len(grants) != 30 {
			t.Fatalf("%d grants; want exactly 30", len(grants))
		}
		if len(late) > 0 {
			t.Fatalf("Wait %s", late[0])
		}
		assertPaced(t, grants, pace)
	})

	t.Run("exact cluster-wide and total allowances without pacing", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		srcs := []budget.Source{}
		for i := range 4 {
			srcs = append(srcs, budget.Source{Name: fmt.Sprintf("s%d", i), Pace: budget.NoPace})
		}
		nodes := budgetNodes(t, h, 3, budget.Config{Sources: srcs, Limits: budget.Limits{Validation: budget.Int(100), Total: budget.Int(70)}})
		grants := hammer(t, nodes, 8, func(b *budget.Budget) (budget.Grant, error) {
			return b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindValidation})
		})
		if len(grants) != 100 {
			t.Fatalf("%d validation grants; want exactly 100", len(grants))
		}
		var i atomic.Int64
		grants = hammer(t, nodes, 8, func(b *budget.Budget) (budget.Grant, error) {
			src := srcs[i.Add(1)%int64(len(srcs))].Name
			return b.Admit(ctx(t), budget.AdmitParams{Source: src, Kind: budget.KindHeadPoll})
		})
		if len(grants) != 70 {
			t.Fatalf("%d head polls over 4 sources; want exactly the total of 70", len(grants))
		}
	})

	t.Run("midnight starts fresh counters", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		clk := clocktest.New(budgetDay.Add(24*time.Hour - time.Microsecond))
		cfg := budget.Config{Sources: []budget.Source{{Name: "s", OwnerDailyLimit: budget.Int(20), Pace: budget.NoPace}}, Now: clk.Now}
		a, b := newBudget(t, h.Open(t), cfg), newBudget(t, h.Open(t), cfg)
		p := budget.AdmitParams{Source: "s", Kind: budget.KindHeadPoll}
		for _, n := range []*budget.Budget{a, b} {
			if _, err := n.Admit(ctx(t), p); err != nil {
				t.Fatal(err)
			}
		}
		_, err := a.Admit(ctx(t), p)
		var ex *budget.ExhaustedError
		if !errors.As(err, &ex) || !ex.ResetAt.Equal(budgetDay.AddDate(0, 0, 1)) {
			t.Fatalf("third admission: %v; want exhausted until midnight", err)
		}
		clk.Set(ex.ResetAt)
		for _, n := range []*budget.Budget{b, a} {
			if _, err := n.Admit(ctx(t), p); err != nil {
				t.Fatalf("after midnight: %v", err)
			}
		}
	})

	t.Run("reservation settled from another node", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		clk := clocktest.New(budgetT0)
		cfg := budget.Config{Limits: budget.Limits{Bytes: budget.Int(1000)}, Now: clk.Now}
		sa, sb := h.Open(t), h.Open(t)
		a, b := newBudget(t, sa, cfg), newBudget(t, sb, cfg)
		g, err := a.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindBytes, Cost: 800, Source: "nntp"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindBytes, Cost: 300}); !errors.Is(err, budget.ErrExhausted) {
			t.Fatalf("over-reservation on the other node: %v; want exhausted", err)
		}
		if err := b.Settle(ctx(t), g.ID, 150); err != nil {
			t.Fatal(err)
		}
		u := usage(t, sa, budgetDay)
		if u["/bytes"].Used != 150 || u["nntp/bytes"].Used != 150 {
			t.Fatalf("usage after settle %+v; want 150 on both counters", u)
		}
		if err := a.Settle(ctx(t), g.ID, 150); err != nil {
			t.Fatalf("repeated settle on the first node: %v", err)
		}
		if err := a.Settle(ctx(t), g.ID, 151); !errors.Is(err, budget.ErrGrantClosed) {
			t.Fatalf("different settle: %v; want ErrGrantClosed", err)
		}
		g2, err := b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindBytes, Cost: 300})
		if err != nil {
			t.Fatal(err)
		}
		clk.Set(budgetDay.AddDate(0, 0, 1))
		if err := a.Release(ctx(t), g2.ID); !errors.Is(err, budget.ErrGrantExpired) {
			t.Fatalf("release on the next day: %v; want ErrGrantExpired", err)
		}
		if u := usage(t, sb, budgetDay); u["/bytes"].Used != 450 {
			t.Fatalf("yesterday's bytes %d; want 450 (the unsettled 300 charged in full)", u["/bytes"].Used)
		}
	})

	t.Run("a source's own exhaustion reaches every node", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		clk := clocktest.New(budgetT0)
		cfg := budget.Config{Sources: []budget.Source{{Name: "s", Pace: budget.NoPace}}, Now: clk.Now}
		a, b := newBudget(t, h.Open(t), cfg), newBudget(t, h.Open(t), cfg)
		if err := a.MarkExhausted(ctx(t), "s", time.Time{}); err != nil {
			t.Fatal(err)
		}
		_, err := b.Admit(ctx(t), budget.AdmitParams{Source: "s", Kind: budget.KindHeadPoll})
		var ex *budget.ExhaustedError
		if !errors.As(err, &ex) || !ex.Reported {
			t.Fatalf("other node: %v; want exhausted as reported by the source", err)
		}
		clk.Set(budgetDay.AddDate(0, 0, 1))
		if _, err := b.Admit(ctx(t), budget.AdmitParams{Source: "s", Kind: budget.KindHeadPoll}); err != nil {
			t.Fatalf("next day: %v", err)
		}
	})

	t.Run("store contract", func(t *testing.T) {
		t.Parallel()
		st := newHarness(t).Open(t)
		admit := func(p budgetdriver.AdmitParams) budgetdriver.AdmitResult {
			t.Helper()
			p.Day = budgetDay
			if p.Now.IsZero() {
				p.Now = budgetT0
			}
			r, err := st.BudgetAdmit(ctx(t), []budgetdriver.AdmitParams{p})
			if err != nil {
				t.Fatal(err)
			}
			return r[0]
		}
		lim := func(scope string, k budgetdriver.Kind, cost, limit int64) budgetdriver.Charge {
			return budgetdriver.Charge{Scope: scope, Kind: k, Cost: cost, Limited: true, Limit: limit}
		}
		rec := func(scope string, k budgetdriver.Kind, cost int64) budgetdriver.Charge {
			return budgetdriver.Charge{Scope: scope, Kind: k, Cost: cost}
		}

		// Work before a total exists; then the total starts at the sum.
		for _, s := range []string{"a", "b"} {
			if r := admit(budgetdriver.AdmitParams{Charges: []budgetdriver.Charge{rec(s, budgetdriver.CounterSource, 3)}}); !r.Admitted {
				t.Fatalf("record-only charge refused: %+v", r)
			}
		}
		r := admit(budgetdriver.AdmitParams{Charges: []budgetdriver.Charge{lim("", budgetdriver.CounterTotal, 2, 7), rec("a", budgetdriver.CounterSource, 2)}})
		if r.Admitted || r.Refused != 0 || r.Used != 6 {
			t.Fatalf("total check %+v; want refused by charge 0 at used 6 (the day's sum)", r)
		}
		r = admit(budgetdriver.AdmitParams{Charges: []budgetdriver.Charge{lim("", budgetdriver.CounterTotal, 1, 7), rec("a", budgetdriver.CounterSource, 1)}})
		if !r.Admitted || !r.Slot.Equal(budgetT0) {
			t.Fatalf("admission within the total %+v", r)
		}
		u := usage(t, st, budgetDay)
		if u["/total"].Used != 7 || u["a/source"].Used != 4 || u["b/source"].Used != 3 {
			t.Fatalf("usage %+v", u)
		}
		// The first refusing charge in order is reported, and nothing moves.
		r = admit(budgetdriver.AdmitParams{Charges: []budgetdriver.Charge{lim("a", budgetdriver.CounterSource, 1, 100), lim("b", budgetdriver.CounterSource, 5, 7)}, PaceKey: "a", Pace: time.Second})
		if r.Admitted || r.Refused != 1 || r.Used != 3 {
			t.Fatalf("%+v; want refused by charge 1", r)
		}
		if u2 := usage(t, st, budgetDay); u2["a/source"].Used != 4 {
			t.Fatalf("a refused admission changed usage: %+v", u2)
		}

		// Pacing: slots, MaxWait, Touch, and giving a slot back.
		pace := func(now time.Time, maxWait time.Duration, touch bool) budgetdriver.AdmitResult {
			return admit(budgetdriver.AdmitParams{Now: now, Charges: []budgetdriver.Charge{rec("p", budgetdriver.Kind(budget.KindSearch), 1)},
				PaceKey: "p", Pace: time.Second, MaxWait: maxWait, Touch: touch})
		}
		if r := pace(budgetT0, 0, false); !r.Admitted || !r.Slot.Equal(budgetT0) {
			t.Fatalf("first slot %+v", r)
		}
		if r := pace(budgetT0.Add(time.Millisecond), 0, false); r.Admitted || r.Refused != -1 || !r.Slot.Equal(budgetT0.Add(time.Second)) {
			t.Fatalf("paced refusal %+v; want the next slot at T0+1s", r)
		}
		if r := pace(budgetT0, 5*time.Second, false); !r.Admitted || !r.Slot.Equal(budgetT0.Add(time.Second)) {
			t.Fatalf("queued slot %+v; want T0+1s", r)
		}
		if r := pace(budgetT0, 5*time.Second, false); !r.Admitted || !r.Slot.Equal(budgetT0.Add(2*time.Second)) {
			t.Fatalf("queued slot %+v; want T0+2s", r)
		}
		// Giving back a slot that is not the last changes nothing.
		cancel := func(slot time.Time) {
			err := st.BudgetCancel(ctx(t), budgetdriver.CancelParams{Day: budgetDay, Charges: []budgetdriver.Charge{rec("p", budgetdriver.Kind(budget.KindSearch), 1)},
				PaceKey: "p", Pace: time.Second, Slot: slot})
			if err != nil {
				t.Fatal(err)
			}
		}
		cancel(budgetT0.Add(time.Second))
		if r := pace(budgetT0, 0, false); r.Admitted || !r.Slot.Equal(budgetT0.Add(3*time.Second)) {
			t.Fatalf("after giving back a middle slot %+v; want the next at T0+3s", r)
		}
		cancel(budgetT0.Add(2 * time.Second))
		if r := pace(budgetT0, 0, false); r.Admitted || !r.Slot.Equal(budgetT0.Add(2*time.Second)) {
			t.Fatalf("after giving back the last slot %+v; want the next at T0+2s", r)
		}
		if u := usage(t, st, budgetDay); u["p/search"].Used != 1 {
			t.Fatalf("refunds left %d; want 1", u["p/search"].Used)
		}
		// A touch never refuses and pushes the next slot to now + pace.
		if r := pace(budgetT0.Add(1500*time.Millisecond), 0, true); !r.Admitted {
			t.Fatalf("touch refused: %+v", r)
		}
		if r := pace(budgetT0.Add(2*time.Second), 0, false); r.Admitted || !r.Slot.Equal(budgetT0.Add(2500*time.Millisecond)) {
			t.Fatalf("after a touch %+v; want the next slot at T0+2.5s", r)
		}

		// A closed counter refuses limited charges but not record-only ones.
		closeUntil := func(scope string, until time.Time) {
			t.Helper()
			if err := st.BudgetClose(ctx(t), budgetdriver.CloseParams{Day: budgetDay, Scope: scope, Kind: budgetdriver.CounterSource, Until: until}); err != nil {
				t.Fatal(err)
			}
		}
		midnight := budgetDay.AddDate(0, 0, 1)
		closeUntil("c", midnight)
		if r := admit(budgetdriver.AdmitParams{Charges: []budgetdriver.Charge{lim("c", budgetdriver.CounterSource, 1, 100)}}); r.Admitted || !r.Closed || !r.ClosedUntil.Equal(midnight) {
			t.Fatalf("closed counter %+v; want refused as closed until midnight", r)
		}
		if r := admit(budgetdriver.AdmitParams{Charges: []budgetdriver.Charge{rec("c", budgetdriver.CounterSource, 1)}}); !r.Admitted {
			t.Fatalf("record-only on a closed counter %+v", r)
		}
		// Closed until an instant: open again from then on; a shorter
		// closing never shortens a longer one.
		soon := budgetT0.Add(time.Minute).Truncate(time.Microsecond)
		closeUntil("d", soon)
		closeUntil("d", budgetT0.Add(time.Second))
		limD := budgetdriver.AdmitParams{Charges: []budgetdriver.Charge{lim("d", budgetdriver.CounterSource, 1, 100)}}
		if r := admit(limD); r.Admitted || !r.Closed || !r.ClosedUntil.Equal(soon) {
			t.Fatalf("counter closed for a minute %+v; want refused until %v", r, soon)
		}
		if u := usage(t, st, budgetDay); !u["d/source"].ClosedUntil.Equal(soon) || !u["c/source"].ClosedUntil.Equal(midnight) {
			t.Fatalf("stored closings %v and %v; want %v and %v", u["d/source"].ClosedUntil, u["c/source"].ClosedUntil, soon, midnight)
		}
		limD.Now = soon
		if r := admit(limD); !r.Admitted {
			t.Fatalf("at the end of the closing %+v; want admitted", r)
		}

		// Prune.
		old := budgetDay.AddDate(0, 0, -3)
		if r, err := st.BudgetAdmit(ctx(t), []budgetdriver.AdmitParams{{Day: old, Now: old, Charges: []budgetdriver.Charge{rec("a", budgetdriver.Kind(budget.KindSearch), 1)},
			Grant: &budgetdriver.Grant{ID: "g_00000000000000000000000000000001", Day: old, Kind: budgetdriver.Kind(budget.KindBytes), Cost: 1, CreatedAt: old}}}); err != nil || !r[0].Admitted {
			t.Fatal(r, err)
		}
		n, err := st.BudgetPrune(ctx(t), budgetDay)
		// At least the old counter and grant; engines may also drop pacing
		// slots that were never used.
		if err != nil || n < 2 {
			t.Fatalf("prune removed %d, %v; want at least 2 (one counter, one grant)", n, err)
		}
		if len(usage(t, st, old)) != 0 {
			t.Fatal("prune kept an old counter")
		}
		if len(usage(t, st, budgetDay)) == 0 {
			t.Fatal("prune removed today's counters")
		}
		if _, err := st.BudgetSettle(ctx(t), budgetdriver.SettleParams{ID: "g_00000000000000000000000000000001", Today: old, Now: old}); !errors.Is(err, budget.ErrGrantNotFound) {
			t.Fatalf("settle of a pruned grant: %v; want ErrGrantNotFound", err)
		}
	})
}
