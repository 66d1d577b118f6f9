package budget_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/budget/budgetdriver"
	"github.com/hostguard/hostguard/internal/budgetstore"
)

// memStore is just enough of a store for the batching tests: counters and
// slots in memory, decided by a Ledger like the real engines do. Every
// BudgetAdmit call waits at a gate, and reports its batch size.
type memStore struct {
	budget.Store // nil: other methods are not used

	entered chan int
	release chan struct{}

	mu       sync.Mutex
	counters map[budgetstore.CounterKey]int64
}

func (s *memStore) BudgetAdmit(_ context.Context, batch []budgetdriver.AdmitParams) ([]budgetdriver.AdmitResult, error) {
	s.entered <- len(batch)
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	l := budgetstore.NewLedger()
	keys, _ := budgetstore.LedgerKeys(batch)
	for _, k := range keys {
		l.PutCounter(k, s.counters[k], time.Time{})
	}
	out := make([]budgetdriver.AdmitResult, len(batch))
	for i, p := range batch {
		out[i] = l.Admit(p)
	}
	for _, c := range l.Counters() {
		s.counters[c.CounterKey] = c.Used
	}
	return out, nil
}

func TestAdmissionsWaitingForTheStoreGoInOneBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{entered: make(chan int), release: make(chan struct{}), counters: map[budgetstore.CounterKey]int64{}}
		b, err := budget.New(st, budget.Config{Limits: budget.Limits{Candidate: budget.Int(4)}})
		if err != nil {
			t.Fatal(err)
		}
		results := make(chan error, 8)
		admit := func(ctx context.Context) {
			_, err := b.Admit(ctx, budget.AdmitParams{Kind: budget.KindCandidate})
			results <- err
		}
		go admit(context.Background())
		if n := <-st.entered; n != 1 {
			t.Fatalf("first batch of %d; want 1", n)
		}
		// While the first batch is in the store, six more callers queue,
		// and one of them gives up.
		cctx, cancel := context.WithCancel(context.Background())
		go admit(cctx)
		for range 5 {
			go admit(context.Background())
		}
		synctest.Wait() // all six are queued
		cancel()
		if err := <-results; !errors.Is(err, context.Canceled) {
			t.Fatalf("the caller that gave up: %v; want context.Canceled", err)
		}
		st.release <- struct{}{}
		if err := <-results; err != nil {
			t.Fatalf("first admission: %v", err)
		}
		if n := <-st.entered; n != 5 {
			t.Fatalf("second batch of %d; want the 5 callers still waiting", n)
		}
		st.release <- struct{}{}
		admitted, refused := 1, 0
		for range 5 {
			switch err := <-results; {
			case err == nil:
				admitted++
			case errors.Is(err, budget.ErrExhausted):
				refused++
			default:
				t.Fatal(err)
			}
		}
		// Each admission in the batch is decided on its own, in order: the
		// allowance of 4 holds.
		if admitted != 4 || refused != 2 {
			t.Fatalf("%d admitted, %d refused; want 4 and 2", admitted, refused)
		}
		for k, v := range st.counters {
			if v != 4 {
				t.Fatalf("counter %v at %d; want 4 (the caller that gave up is not charged)", k, v)
			}
		}
	})
}

func TestAStoreErrorReachesEveryCallerOfTheBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &failStore{entered: make(chan int), release: make(chan struct{})}
		b, _ := budget.New(st, budget.Config{})
		results := make(chan error, 4)
		for range 3 {
			go func() {
				_, err := b.Admit(context.Background(), budget.AdmitParams{Kind: budget.KindValidation})
				results <- err
			}()
		}
		total := 0
		for total < 3 {
			total += <-st.entered
			st.release <- struct{}{}
		}
		for range 3 {
			if err := <-results; !errors.Is(err, errDown) {
				t.Fatalf("%v; want the store's error", err)
			}
		}
	})
}

var errDown = errors.New("store down")

type failStore struct {
	budget.Store
	entered chan int
	release chan struct{}
}

func (s *failStore) BudgetAdmit(_ context.Context, batch []budgetdriver.AdmitParams) ([]budgetdriver.AdmitResult, error) {
	s.entered <- len(batch)
	<-s.release
	return nil, errDown
}
