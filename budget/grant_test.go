package budget_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/budget/budgetdriver"
)

const mib = 1 << 20

func TestByteReservations(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{})
	res := func(n int64) (budget.Grant, error) {
		return f.b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindBytes, Cost: n * mib})
	}
	var gs []budget.Grant
	for range 5 {
		g, err := res(100)
		if err != nil {
			t.Fatal(err)
		}
		if !budget.ValidGrantID(g.ID) || g.Cost != 100*mib || g.Kind != budget.KindBytes {
			t.Fatalf("grant %+v; want a reservation with an id", g)
		}
		gs = append(gs, g)
	}
	if gs[0].ID == gs[1].ID {
		t.Fatal("two reservations share an id")
	}
	// 500 of 512 MiB reserved: 100 more do not fit.
	_, err := res(100)
	var ex *budget.ExhaustedError
	if !errors.As(err, &ex) || ex.Kind != budget.KindBytes || ex.Used != 500*mib || ex.Limit != 512*mib {
		t.Fatalf("sixth reservation: %v; want bytes exhausted at 500 of 512 MiB", err)
	}
	// Settling to the actual figure releases the difference.
	if err := f.b.Settle(ctx(t), gs[0].ID, 10*mib); err != nil {
		t.Fatal(err)
	}
	if l := f.kind(t, budget.KindBytes); l.Used != 410*mib {
		t.Fatalf("bytes used %d MiB after settling 100 → 10; want 410", l.Used/mib)
	}
	if _, err := res(100); err != nil {
		t.Fatalf("reservation after the settle freed room: %v", err)
	}
	// Release gives everything back.
	if err := f.b.Release(ctx(t), gs[1].ID); err != nil {
		t.Fatal(err)
	}
	if l := f.kind(t, budget.KindBytes); l.Used != 410*mib {
		t.Fatalf("bytes used %d MiB; want 410", l.Used/mib)
	}
	// Settling above the reservation charges the excess: what was spent
	// was spent.
	if err := f.b.Settle(ctx(t), gs[2].ID, 150*mib); err != nil {
		t.Fatal(err)
	}
	if l := f.kind(t, budget.KindBytes); l.Used != 460*mib {
		t.Fatalf("bytes used %d MiB; want 460", l.Used/mib)
	}
	// Repeating a call is harmless; another figure is refused.
	if err := f.b.Settle(ctx(t), gs[0].ID, 10*mib); err != nil {
		t.Fatalf("repeated settle: %v", err)
	}
	if err := f.b.Release(ctx(t), gs[1].ID); err != nil {
		t.Fatalf("repeated release: %v", err)
	}
	if err := f.b.Settle(ctx(t), gs[0].ID, 20*mib); !errors.Is(err, budget.ErrGrantClosed) {
		t.Fatalf("settle with another figure: %v; want ErrGrantClosed", err)
	}
	if err := f.b.Release(ctx(t), gs[0].ID); !errors.Is(err, budget.ErrGrantClosed) {
		t.Fatalf("release after settle: %v; want ErrGrantClosed", err)
	}
	if l := f.kind(t, budget.KindBytes); l.Used != 460*mib {
		t.Fatalf("bytes used %d MiB after refused calls; want 460", l.Used/mib)
	}
}

func TestUnsettledReservationStaysChargedToItsDay(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{})
	g, err := f.b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindBytes, Cost: 300 * mib, Source: "nntp"})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Set(time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC))
	if l := f.kind(t, budget.KindBytes); l.Used != 0 {
		t.Fatalf("new day's bytes %d; want 0", l.Used)
	}
	if err := f.b.Settle(ctx(t), g.ID, 1); !errors.Is(err, budget.ErrGrantExpired) {
		t.Fatalf("settle on the next day: %v; want ErrGrantExpired", err)
	}
	cs, err := f.st.BudgetUsage(ctx(t), time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, c := range cs {
		if c.Kind == budgetdriver.Kind(budget.KindBytes) {
			found++
			if c.Used != 300*mib {
				t.Fatalf("yesterday's %q bytes counter %d; want the full 300 MiB", c.Scope, c.Used)
			}
		}
	}
	if found != 2 {
		t.Fatalf("%d bytes counters yesterday; want the cluster one and the source's", found)
	}
}

func TestSettleBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{})
	g, err := f.b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindBytes, Cost: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "42", "g_zz", strings.Repeat("g", 200), "G_" + g.ID[2:]} {
		if err := f.b.Settle(ctx(t), id, 1); err == nil || !strings.Contains(err.Error(), "not a grant id") {
			t.Errorf("Settle(%q): %v; want a 'not a grant id' error", id, err)
		}
	}
	for _, actual := range []int64{-1, budget.MaxAmount + 1} {
		var ie *budget.InputError
		if err := f.b.Settle(ctx(t), g.ID, actual); !errors.As(err, &ie) || ie.Field != "actual" || !strings.Contains(ie.Reason, fmt.Sprint(actual)) {
			t.Errorf("actual %d: %v; want an InputError naming actual", actual, err)
		}
	}
	unknown := "g_" + strings.Repeat("0", 32)
	if err := f.b.Settle(ctx(t), unknown, 1); !errors.Is(err, budget.ErrGrantNotFound) {
		t.Errorf("unknown id: %v; want ErrGrantNotFound", err)
	}
	if l := f.kind(t, budget.KindBytes); l.Used != 10 {
		t.Fatalf("bad calls changed the bytes used to %d", l.Used)
	}
	// Grants of other kinds are not reservations.
	v, err := f.b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindValidation})
	if err != nil || v.ID != "" {
		t.Fatalf("validation grant %+v, %v; want one without an id", v, err)
	}
}

func TestPruneKeepsRecentDays(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{KeepDays: 2, Sources: []budget.Source{smallSource()}})
	start := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	for d := range 4 {
		f.clock.Set(start.AddDate(0, 0, d))
		if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindBytes, Cost: 5}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := f.b.Prune(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// Days 10 and 11 go: 2 days × (idx/head_poll, idx/source, /bytes counters + 1 grant).
	if n != 8 {
		t.Fatalf("pruned %d rows; want 8", n)
	}
	for d, want := range map[int]int{0: 0, 1: 0, 2: 3, 3: 3} {
		cs, err := f.st.BudgetUsage(ctx(t), start.AddDate(0, 0, d).Truncate(24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != want {
			t.Errorf("day %d keeps %d counters; want %d", 10+d, len(cs), want)
		}
	}
}
