package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/internal/clocktest"
)

// testBudgetSettings checks that run-time budget settings are shared by
// every handle on the store, at its next admission, and survive reopening.
func testBudgetSettings(t *testing.T, newHarness NewFunc) {
	t.Run("a change on one node is seen by another's next admission and survives reopening", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		clk := clocktest.New(budgetT0)
		cfg := budget.Config{Now: clk.Now, Sources: []budget.Source{
			{Name: "src", OwnerDailyLimit: budget.Int(100), Pace: budget.NoPace}, // allowance 10
			{Name: "rep", Pace: budget.NoPace},
		}}
		a, b := newBudget(t, h.Open(t), cfg), newBudget(t, h.Open(t), cfg)
		poll := func(bu *budget.Budget, source string) error {
			_, err := bu.Admit(ctx(t), budget.AdmitParams{Source: source, Kind: budget.KindHeadPoll})
			return err
		}
		if err := poll(b, "src"); err != nil {
			t.Fatal(err)
		}

		// Pause on A stops B, though B's own snapshot says running.
		if err := a.Pause(ctx(t), true); err != nil {
			t.Fatal(err)
		}
		if err := poll(b, "src"); !errors.Is(err, budget.ErrPaused) {
			t.Fatalf("B after A paused: %v; want ErrPaused", err)
		}
		// And resuming on A resumes B, though B last saw a pause.
		if err := a.Pause(ctx(t), false); err != nil {
			t.Fatal(err)
		}
		if err := poll(b, "src"); err != nil {
			t.Fatalf("B after A resumed: %v", err)
		}

		// A lowered limit: B has used 2, the new allowance is 2.
		if err := a.SetSource(ctx(t), budget.Source{Name: "src", OwnerDailyLimit: budget.Int(20), Pace: budget.NoPace}); err != nil {
			t.Fatal(err)
		}
		var ex *budget.ExhaustedError
		if err := poll(b, "src"); !errors.As(err, &ex) || ex.Limit != 2 {
			t.Fatalf("B after A lowered the limit: %v; want exhausted at 2", err)
		}

		// A source added and removed on A.
		if err := a.SetSource(ctx(t), budget.Source{Name: "extra", Pace: budget.NoPace}); err != nil {
			t.Fatal(err)
		}
		if err := poll(b, "extra"); err != nil {
			t.Fatalf("B after A added a source: %v", err)
		}
		if err := a.RemoveSource(ctx(t), "extra"); err != nil {
			t.Fatal(err)
		}
		if err := poll(b, "extra"); !errors.Is(err, budget.ErrUnknownSource) {
			t.Fatalf("B after A removed the source: %v; want ErrUnknownSource", err)
		}

		// A limit reported on A applies on B: 10 % of 50.
		if err := a.ReportLimit(ctx(t), "rep", 50); err != nil {
			t.Fatal(err)
		}
		if s := sourceReport(t, b, "rep"); s.Allowance != 5 || s.LimitFrom != budget.LimitFromReported {
			t.Fatalf("B's report after A's ReportLimit: %+v; want 5 from the reported 50", s)
		}
		// The same report again (a caps answer re-read) writes nothing.
		ss, ok := h.Open(t).(budget.SettingsStore)
		if !ok {
			t.Fatalf("%s store does not keep budget settings", h.Engine)
		}
		before, err := ss.BudgetSettings(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.ReportLimit(ctx(t), "rep", 50); err != nil {
			t.Fatal(err)
		}
		if after, err := ss.BudgetSettings(ctx(t)); err != nil || after.Generation != before.Generation {
			t.Fatalf("generation %d after an unchanged report, %v; want %d", after.Generation, err, before.Generation)
		}

		// A restarted node (new handle, new Budget, same base) starts
		// with the stored overrides.
		c := newBudget(t, h.Open(t), cfg)
		if err := poll(c, "src"); !errors.As(err, &ex) || ex.Limit != 2 {
			t.Fatalf("reopened after the lowered limit: %v; want exhausted at 2", err)
		}
		if err := poll(c, "extra"); !errors.Is(err, budget.ErrUnknownSource) {
			t.Fatalf("reopened after the removal: %v; want ErrUnknownSource", err)
		}
		if s := sourceReport(t, c, "rep"); s.Allowance != 5 {
			t.Fatalf("reopened: reported limit lost: %+v", s)
		}
		if err := b.Pause(ctx(t), true); err != nil {
			t.Fatal(err)
		}
		d := newBudget(t, h.Open(t), cfg)
		if err := d.Refresh(ctx(t)); err != nil || !d.Paused() {
			t.Fatalf("reopened after a pause: paused %v, %v; want paused", d.Paused(), err)
		}
		if err := b.Pause(ctx(t), false); err != nil {
			t.Fatal(err)
		}

		// One source paused on A stops it on B and after a restart; the
		// other source goes on.
		if err := a.PauseSource(ctx(t), "rep", true); err != nil {
			t.Fatal(err)
		}
		if err := poll(b, "rep"); !errors.Is(err, budget.ErrPaused) {
			t.Fatalf("B after A paused the source: %v; want ErrPaused", err)
		}
		if e := newBudget(t, h.Open(t), cfg); !sourceReport(t, e, "rep").Paused {
			t.Fatal("reopened after a source's pause: the source is not paused")
		}
		if err := a.PauseSource(ctx(t), "rep", false); err != nil {
			t.Fatal(err)
		}
		if err := poll(b, "rep"); err != nil {
			t.Fatalf("B after A resumed the source: %v", err)
		}

		// Removing the override on B restores the base on every node:
		// allowance 10, 2 used.
		if err := b.RemoveSource(ctx(t), "src"); err != nil {
			t.Fatal(err)
		}
		if err := poll(a, "src"); err != nil {
			t.Fatalf("A after B removed the override: %v", err)
		}
		if err := c.RemoveSource(ctx(t), "src"); !errors.Is(err, budget.ErrConfiguredSource) {
			t.Fatalf("removing a configured source twice: %v; want ErrConfiguredSource", err)
		}
	})

	t.Run("concurrent changes from several nodes are all kept", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		const nodes, perNode = 3, 3
		var srcs []budget.Source
		for i := range nodes * perNode {
			srcs = append(srcs, budget.Source{Name: fmt.Sprintf("s%d", i)})
		}
		cfg := budget.Config{Sources: srcs, Now: clocktest.New(budgetT0).Now}
		bs := budgetNodes(t, h, nodes, cfg)
		var wg sync.WaitGroup
		for n, bu := range bs {
			for k := range perNode {
				i := n*perNode + k
				wg.Go(func() {
					if err := bu.ReportLimit(ctx(t), fmt.Sprintf("s%d", i), int64(100*(i+1))); err != nil {
						t.Error(err)
					}
				})
			}
		}
		wg.Wait()
		check := newBudget(t, h.Open(t), cfg)
		for i := range nodes * perNode {
			if s := sourceReport(t, check, fmt.Sprintf("s%d", i)); s.DailyLimit != int64(100*(i+1)) {
				t.Errorf("s%d: daily limit %d; want %d (a concurrent change was lost)", i, s.DailyLimit, 100*(i+1))
			}
		}
	})
}

func sourceReport(t *testing.T, b *budget.Budget, name string) budget.SourceReport {
	t.Helper()
	rep, err := b.Report(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Sources {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("source %q not in the report", name)
	return budget.SourceReport{}
}
