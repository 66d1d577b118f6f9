package budget_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/budget/budgetdriver"
	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/sqlitetest"
)

// signalStore tells a test when an admission has reached the store.
type signalStore struct {
	budget.Store
	admitted chan budgetdriver.AdmitResult
}

func (s *signalStore) BudgetAdmit(ctx context.Context, batch []budgetdriver.AdmitParams) ([]budgetdriver.AdmitResult, error) {
	rs, err := s.Store.BudgetAdmit(ctx, batch)
	if err == nil {
		for _, r := range rs {
			s.admitted <- r
		}
	}
	return rs, err
}

func pacedSource(pace time.Duration) budget.Source {
	return budget.Source{Name: "idx", Pace: pace}
}

func TestWaitQueuesCallersInSlots(t *testing.T) {
	t.Parallel()
	const pace = 30 * time.Millisecond
	f := setup(t, budget.Config{Sources: []budget.Source{pacedSource(pace)}})
	// The fake clock stands still, so the slots are exactly noon, noon+pace,
	// ...; the sleeps are real.
	const n = 4
	var wg sync.WaitGroup
	grants := make(chan budget.Grant, n)
	for range n {
		wg.Go(func() {
			g, err := f.b.Wait(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindSearch})
			if err != nil {
				t.Error(err)
				return
			}
			grants <- g
		})
	}
	wg.Wait()
	close(grants)
	var ats []time.Time
	for g := range grants {
		ats = append(ats, g.At)
	}
	sort.Slice(ats, func(i, j int) bool { return ats[i].Before(ats[j]) })
	if len(ats) != n {
		t.Fatalf("%d grants; want %d", len(ats), n)
	}
	for i, at := range ats {
		if want := noon.Add(time.Duration(i) * pace); !at.Equal(want) {
			t.Fatalf("slot %d at %v; want %v", i, at, want)
		}
	}
	// While the queue is full, a non-waiting caller is told how long the
	// queue is.
	_, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindSearch})
	var pe *budget.PacedError
	if !errors.As(err, &pe) || pe.RetryAfter != n*pace {
		t.Fatalf("Admit behind the queue: %v; want paced for %v", err, n*pace)
	}
}

func TestWaitSleepsUntilItsSlot(t *testing.T) {
	t.Parallel()
	const pace = 50 * time.Millisecond
	// A real clock here: the test checks that Wait returns no earlier than
	// its slot.
	st := sqlitetest.Open(t)
	b, err := budget.New(st, budget.Config{Sources: []budget.Source{pacedSource(pace)}})
	if err != nil {
		t.Fatal(err)
	}
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	if _, err := b.Admit(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	g, err := b.Wait(ctx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if now := time.Now(); now.Before(g.At) {
		t.Fatalf("Wait returned at %v, before its slot %v", now, g.At)
	}
}

func TestWaitNeverWaitsForAnExhaustedDay(t *testing.T) {
	t.Parallel()
	src := pacedSource(time.Hour)
	src.OwnerDailyLimit = budget.Int(10) // allowance 1
	f := setup(t, budget.Config{Sources: []budget.Source{src}})
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	if _, err := f.b.Wait(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	// No deadline: were Wait to block, the test would time out.
	if _, err := f.b.Wait(context.Background(), p); !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("Wait on an exhausted day: %v; want ErrExhausted at once", err)
	}
}

func TestWaitRefusesASlotPastItsDeadline(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{pacedSource(time.Hour)}})
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	if _, err := f.b.Admit(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := f.b.Wait(c, p)
	var pe *budget.PacedError
	if !errors.As(err, &pe) || pe.RetryAfter != time.Hour {
		t.Fatalf("Wait with a deadline before the slot: %v; want paced for 1h at once", err)
	}
	if s := f.source(t, "idx"); s.Used != 1 {
		t.Fatalf("used %d; want 1 (the refused Wait charged nothing)", s.Used)
	}
}

func TestCancelledWaitGivesItsAdmissionBack(t *testing.T) {
	t.Parallel()
	st := &signalStore{Store: sqlitetest.Open(t), admitted: make(chan budgetdriver.AdmitResult, 8)}
	clk := clocktest.New(noon)
	b, err := budget.New(st, budget.Config{Sources: []budget.Source{pacedSource(time.Hour)}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindBytes, Cost: 1000}
	if _, err := b.Admit(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	<-st.admitted

	// A waiter reserves the slot at noon+1h, then gives up.
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.Wait(c, p)
		done <- err
	}()
	if r := <-st.admitted; !r.Admitted || !r.Slot.Equal(noon.Add(time.Hour)) {
		t.Fatalf("waiter's admission %+v; want its slot at noon+1h", r)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait: %v; want context.Canceled", err)
	}
	report := func() budget.Report {
		r, err := b.Report(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, l := range report().Kinds {
		if l.Kind == budget.KindBytes && l.Used != 1000 {
			t.Fatalf("bytes used %d after the cancelled Wait; want 1000 (refunded)", l.Used)
		}
	}
	// The slot came back: at noon+1h the next request is admitted, not
	// paced until noon+2h.
	clk.Advance(time.Hour)
	g, err := b.Admit(ctx(t), p)
	if err != nil {
		t.Fatalf("Admit at the given-back slot: %v", err)
	}
	<-st.admitted
	// The cancelled waiter's reservation is gone from the store.
	if err := b.Settle(ctx(t), g.ID, 10); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledWaitLeavesAGapBehindLaterWaiters(t *testing.T) {
	t.Parallel()
	st := &signalStore{Store: sqlitetest.Open(t), admitted: make(chan budgetdriver.AdmitResult, 8)}
	clk := clocktest.New(noon)
	b, err := budget.New(st, budget.Config{Sources: []budget.Source{pacedSource(time.Hour)}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	if _, err := b.Admit(ctx(t), p); err != nil { // slot noon
		t.Fatal(err)
	}
	<-st.admitted
	c1, cancel1 := context.WithCancel(context.Background())
	c2, cancel2 := context.WithCancel(context.Background())
	done1, done2 := make(chan error, 1), make(chan error, 1)
	go func() { _, err := b.Wait(c1, p); done1 <- err }() // slot noon+1h
	<-st.admitted
	go func() { _, err := b.Wait(c2, p); done2 <- err }() // slot noon+2h
	<-st.admitted
	cancel1()
	if err := <-done1; !errors.Is(err, context.Canceled) {
		t.Fatalf("first waiter: %v", err)
	}
	// The second waiter keeps its slot, so the next free one is noon+3h.
	_, err = b.Admit(ctx(t), p)
	var pe *budget.PacedError
	if !errors.As(err, &pe) || pe.RetryAfter != 3*time.Hour {
		t.Fatalf("Admit: %v; want paced for 3h", err)
	}
	cancel2()
	if err := <-done2; !errors.Is(err, context.Canceled) {
		t.Fatalf("second waiter: %v", err)
	}
	// Now the last slot is given back: only noon+1h's gap remains unusable.
	_, err = b.Admit(ctx(t), p)
	if !errors.As(err, &pe) || pe.RetryAfter != 2*time.Hour {
		t.Fatalf("Admit: %v; want paced for 2h", err)
	}
}
