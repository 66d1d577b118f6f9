package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/retry/retrydriver"
	"github.com/hostguard/hostguard/store/internal/fault"
)

// addInOrder adds n items named prefix000, prefix001, ..., each due a
// millisecond after the one before, so that claims take them in that order.
func addInOrder(t testing.TB, e *retryEnv, s *retry.Scheduler, prefix string, n int) {
	t.Helper()
	for _, it := range ids(prefix, n) {
		mustAdd(t, s, it)
		e.clock.Advance(time.Millisecond)
	}
}

// plainStore hides every optional interface of the store it wraps, as a
// third-party Store without them would look.
type plainStore struct{ retry.Store }

// testRetrySucceedClaim checks Scheduler.SucceedAndClaim on the engine's
// one-transaction path ("one call") and on the path a Store without it
// takes ("settle, then claim"): the results must not differ.
func testRetrySucceedClaim(t *testing.T, newHarness NewFunc) {
	for _, path := range []struct {
		name string
		open func(t *testing.T, e *retryEnv) *retry.Scheduler
	}{
		{"one call", func(t *testing.T, e *retryEnv) *retry.Scheduler {
			if _, ok := e.h.Open(t).(retrydriver.SucceedClaimer); !ok {
				t.Fatalf("%s store cannot succeed and claim in one transaction", e.h.Engine)
			}
			return e.s
		}},
		{"settle, then claim", func(t *testing.T, e *retryEnv) *retry.Scheduler {
			s, err := retry.New(plainStore{e.h.Open(t).(retry.Store)}, e.cfg)
			if err != nil {
				t.Fatalf("retry.New: %v", err)
			}
			return s
		}},
	} {
		t.Run(path.name, func(t *testing.T) {
			testRetrySucceedClaimOn(t, newHarness, path.open)
		})
	}

	t.Run("workers settling with their claims beside plain ones", func(t *testing.T) {
		t.Parallel()
		testRetrySucceedClaimConcurrent(t, newHarness)
	})

	t.Run("a failed step leaves the successes unapplied too", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		addInOrder(t, e, e.s, "a", 3)
		first := mustClaim(t, e.s, 1, time.Minute)[0]
		injected := errors.New("injected after the last step")
		ls, errs, err := e.s.SucceedAndClaim(fault.WithAfterLast(ctx(t), injected), []retry.LeaseRef{first.Ref()},
			retry.ClaimParams{N: 2, Lease: time.Minute, Worker: "w2"})
		if err == nil || ls != nil || errs != nil {
			t.Fatalf("SucceedAndClaim with a failing transaction: %v, %v, %v; want only an error", leaseIDs(ls), errs, err)
		}
		other := e.open(t)
		if it := mustGet(t, other, first.ID); it.State != retry.Leased || it.Worker != "w" {
			t.Fatalf("the success was committed without its claim: %+v", it)
		}
		for _, id := range []string{"a001", "a002"} {
			if it := mustGet(t, other, id); it.State != retry.Pending || it.Attempts != 0 {
				t.Fatalf("the claim was committed although the transaction failed: %s %+v", id, it)
			}
		}
		// The lease is intact: the same call without the fault goes through.
		ls, errs, err = e.s.SucceedAndClaim(ctx(t), []retry.LeaseRef{first.Ref()}, retry.ClaimParams{N: 2, Lease: time.Minute})
		if err != nil || len(errs) != 1 || errs[0] != nil || len(ls) != 2 {
			t.Fatalf("SucceedAndClaim after the failure: %v, %v, %v; want 2 leases and one nil", leaseIDs(ls), errs, err)
		}
		if it := mustGet(t, other, first.ID); it.State != retry.Done {
			t.Fatalf("after a good call: %+v, want done", it)
		}
	})
}

func testRetrySucceedClaimOn(t *testing.T, newHarness NewFunc, open func(*testing.T, *retryEnv) *retry.Scheduler) {
	const lease = time.Minute

	t.Run("a success settled and the next claim granted in one call", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		s := open(t, e)
		mustAdd(t, s, retry.NewItem{ID: "first", Priority: 1}, retry.NewItem{ID: "next"})
		first := mustClaim(t, s, 1, lease)[0]
		if first.ID != "first" {
			t.Fatalf("claimed %s, want first", first.ID)
		}
		ls, errs, err := s.SucceedAndClaim(ctx(t), []retry.LeaseRef{first.Ref()}, retry.ClaimParams{N: 5, Lease: lease, Worker: "w2"})
		if err != nil || !slices.Equal(errs, []error{nil}) {
			t.Fatalf("SucceedAndClaim: %v, %v", errs, err)
		}
		if got := leaseIDs(ls); !slices.Equal(got, []string{"next"}) {
			t.Fatalf("claimed %v, want [next]", got)
		}
		other := e.open(t)
		if it := mustGet(t, other, "first"); it.State != retry.Done || it.Worker != "" || !it.NextAt.IsZero() {
			t.Fatalf("settled item read back: %+v, want done", it)
		}
		if it := mustGet(t, other, "next"); it.State != retry.Leased || it.Worker != "w2" || it.Attempts != 1 ||
			!it.LeaseUntil.Equal(ls[0].Until) {
			t.Fatalf("claimed item read back: %+v, want leased by w2 until %v", it, ls[0].Until)
		}
		// The granted lease is a real one: it settles, and the settled one
		// repeats harmlessly.
		errs, err = s.Settle(ctx(t), []retry.Outcome{{Lease: ls[0].Ref(), Op: retry.OpSucceed}, {Lease: first.Ref(), Op: retry.OpSucceed}})
		if err != nil || !slices.Equal(errs, []error{nil, nil}) {
			t.Fatalf("Settle of the granted lease and a repeat: %v, %v", errs, err)
		}
	})

	t.Run("a stale ref is reported per item while the others settle and the claim runs", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		s := open(t, e)
		addInOrder(t, e, s, "x", 4)
		addInOrder(t, e, s, "y", 2)
		l := mustClaim(t, s, 4, lease)
		if got := leaseIDs(l); !slices.Equal(got, []string{"x000", "x001", "x002", "x003"}) {
			t.Fatalf("claimed %v", got)
		}
		if err := s.Succeed(ctx(t), l[2].Ref()); err != nil {
			t.Fatalf("Succeed: %v", err)
		}
		if err := s.Forget(ctx(t), l[1].ID); err != nil {
			t.Fatalf("Forget: %v", err)
		}
		done := []retry.LeaseRef{
			l[0].Ref(),
			l[1].Ref(),                       // forgotten
			l[2].Ref(),                       // settled already: a repeat
			{ID: l[3].ID, Token: l[0].Token}, // another lease's token
		}
		ls, errs, err := s.SucceedAndClaim(ctx(t), done, retry.ClaimParams{N: 3, Lease: lease})
		if err != nil {
			t.Fatalf("SucceedAndClaim: %v", err)
		}
		want := []error{nil, retry.ErrNotFound, nil, retry.ErrLeaseLost}
		if len(errs) != len(want) {
			t.Fatalf("errs %v, want %v", errs, want)
		}
		for i := range want {
			if !errors.Is(errs[i], want[i]) || (want[i] == nil) != (errs[i] == nil) {
				t.Fatalf("errs %v, want %v", errs, want)
			}
		}
		if got := leaseIDs(ls); !slices.Equal(got, []string{"y000", "y001"}) {
			t.Fatalf("claimed %v, want [y000 y001]", got)
		}
		other := e.open(t)
		if it := mustGet(t, other, l[0].ID); it.State != retry.Done {
			t.Fatalf("%s read back: %+v, want done", l[0].ID, it)
		}
		if it := mustGet(t, other, l[3].ID); it.State != retry.Leased {
			t.Fatalf("%s read back: %+v, want still leased", l[3].ID, it)
		}
		if err := s.Succeed(ctx(t), l[3].Ref()); err != nil {
			t.Fatalf("the lease a wrong token named is still its holder's: %v", err)
		}
	})

	t.Run("a settled item is never claimed again, even from a lease that ran out", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		s := open(t, e)
		mustAdd(t, s, retry.NewItem{ID: "late", Priority: 9}, retry.NewItem{ID: "other"})
		late := mustClaim(t, s, 1, lease)[0]
		e.clock.Advance(2 * lease)
		// The lease ran out and nobody claimed the item since: its late
		// success is taken, and comes before the claim, which would
		// otherwise lease it again first (highest priority).
		ls, errs, err := s.SucceedAndClaim(ctx(t), []retry.LeaseRef{late.Ref()}, retry.ClaimParams{N: 10, Lease: lease})
		if err != nil || !slices.Equal(errs, []error{nil}) {
			t.Fatalf("SucceedAndClaim: %v, %v", errs, err)
		}
		if got := leaseIDs(ls); !slices.Equal(got, []string{"other"}) {
			t.Fatalf("claimed %v, want [other]", got)
		}
		e.clock.Advance(2 * lease)
		if again := mustClaim(t, s, 10, lease); !slices.Equal(leaseIDs(again), []string{"other"}) {
			t.Fatalf("claim after the leases ran out: %v, want only [other]", leaseIDs(again))
		}
		if it := mustGet(t, e.open(t), "late"); it.State != retry.Done || it.Attempts != 1 {
			t.Fatalf("late read back: %+v, want done after one attempt", it)
		}
	})

	t.Run("bad input and an ended context change nothing", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		s := open(t, e)
		addInOrder(t, e, s, "z", 3)
		l := mustClaim(t, s, 1, lease)[0]
		good := retry.ClaimParams{N: 1, Lease: lease}
		for name, c := range map[string]struct {
			done  []retry.LeaseRef
			p     retry.ClaimParams
			field string
		}{
			"N=0":            {[]retry.LeaseRef{l.Ref()}, retry.ClaimParams{Lease: lease}, "n"},
			"negative wait":  {[]retry.LeaseRef{l.Ref()}, retry.ClaimParams{N: 1, Lease: lease, Wait: -1}, "wait_seconds"},
			"worker with LF": {[]retry.LeaseRef{l.Ref()}, retry.ClaimParams{N: 1, Lease: lease, Worker: "a\nb"}, "worker"},
			"bad token":      {[]retry.LeaseRef{l.Ref(), {ID: "z001", Token: "01"}}, good, "done[1].lease"},
			"empty id":       {[]retry.LeaseRef{l.Ref(), {Token: l.Token}}, good, "done[1].id"},
		} {
			_, errs, err := s.SucceedAndClaim(ctx(t), c.done, c.p)
			var ie *retry.InputError
			if !errors.As(err, &ie) || ie.Field != c.field || errs != nil {
				t.Errorf("%s: %v, %v; want an InputError on %s", name, errs, err, c.field)
			}
		}
		ended, cancel := context.WithCancel(ctx(t))
		cancel()
		for _, wait := range []time.Duration{0, time.Second} {
			if _, _, err := s.SucceedAndClaim(ended, []retry.LeaseRef{l.Ref()}, retry.ClaimParams{N: 1, Lease: lease, Wait: wait}); !errors.Is(err, context.Canceled) {
				t.Errorf("ended context, wait %v: %v, want context.Canceled", wait, err)
			}
		}
		other := e.open(t)
		if it := mustGet(t, other, l.ID); it.State != retry.Leased {
			t.Fatalf("rejected calls settled the lease: %+v", it)
		}
		for _, id := range []string{"z001", "z002"} {
			if it := mustGet(t, other, id); it.State != retry.Pending {
				t.Fatalf("rejected calls claimed %s: %+v", id, it)
			}
		}
	})

	t.Run("a waiting call commits its successes even when nothing comes", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		s := open(t, e)
		mustAdd(t, s, retry.NewItem{ID: "only"})
		l := mustClaim(t, s, 1, lease)[0]
		ls, errs, err := s.SucceedAndClaim(ctx(t), []retry.LeaseRef{l.Ref()}, retry.ClaimParams{N: 1, Lease: lease, Wait: 20 * time.Millisecond})
		if err != nil || len(ls) != 0 || !slices.Equal(errs, []error{nil}) {
			t.Fatalf("SucceedAndClaim with a wait and no work: %v, %v, %v; want no lease and one nil", leaseIDs(ls), errs, err)
		}
		if it := mustGet(t, e.open(t), "only"); it.State != retry.Done {
			t.Fatalf("read back: %+v, want done", it)
		}
	})

	t.Run("an item named twice is judged in order", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		s := open(t, e)
		addInOrder(t, e, s, "d", 3)
		l := mustClaim(t, s, 2, lease)
		done := []retry.LeaseRef{{ID: l[0].ID, Token: l[1].Token}, l[0].Ref(), l[0].Ref()}
		ls, errs, err := s.SucceedAndClaim(ctx(t), done, retry.ClaimParams{N: 5, Lease: lease})
		if err != nil || len(errs) != 3 || !errors.Is(errs[0], retry.ErrLeaseLost) || errs[1] != nil || errs[2] != nil {
			t.Fatalf("SucceedAndClaim: %v, %v; want [ErrLeaseLost nil nil]", errs, err)
		}
		if got := leaseIDs(ls); !slices.Equal(got, []string{"d002"}) {
			t.Fatalf("claimed %v, want [d002]", got)
		}
		if it := mustGet(t, e.open(t), l[0].ID); it.State != retry.Done {
			t.Fatalf("read back: %+v, want done", it)
		}
	})
}

// testRetrySucceedClaimConcurrent runs workers that settle with their next
// claim beside workers that claim, release and succeed one call at a time,
// on three handles, until every item is done. On PostgreSQL the two kinds
// of transaction change the same counter rows in opposite orders unless
// the one-call path orders its locks; a deadlock, a lost success or a
// lease granted twice fails the test.
func testRetrySucceedClaimConcurrent(t *testing.T, newHarness NewFunc) {
	const (
		items   = 300
		workers = 6
		lease   = time.Minute
	)
	e := newRetryEnv(t, newHarness, retry.Config{})
	nodes := []*retry.Scheduler{e.s, e.open(t), e.open(t)}
	mustAdd(t, e.s, ids("k", items)...)
	var (
		mu       sync.Mutex
		granted  = map[string]bool{}
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	note := func(ls []retry.Lease) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range ls {
			if granted[l.Token] {
				failures = append(failures, "token granted twice: "+l.Token)
			}
			granted[l.Token] = true
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := nodes[w%len(nodes)]
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			var held []retry.LeaseRef
			for time.Now().Before(deadline) {
				p := retry.ClaimParams{N: 1 + rng.IntN(4), Lease: lease, Worker: fmt.Sprint("w", w)}
				if w%2 == 0 {
					ls, errs, err := s.SucceedAndClaim(ctx(t), held, p)
					if err != nil {
						fail("worker %d: SucceedAndClaim: %v", w, err)
						return
					}
					for i, err := range errs {
						if err != nil {
							fail("worker %d: success of %s: %v", w, held[i].ID, err)
						}
					}
					note(ls)
					held = held[:0]
					for _, l := range ls {
						held = append(held, l.Ref())
					}
					if len(ls) == 0 {
						return
					}
					continue
				}
				ls, err := s.Claim(ctx(t), p)
				if err != nil {
					fail("worker %d: Claim: %v", w, err)
					return
				}
				note(ls)
				if len(ls) == 0 {
					return
				}
				for _, l := range ls {
					var err error
					if rng.IntN(2) == 0 {
						err = s.Release(ctx(t), l.Ref())
					} else {
						err = s.Succeed(ctx(t), l.Ref())
					}
					if err != nil {
						fail("worker %d: settle %s: %v", w, l.ID, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	// A worker that found nothing stops, so the ones still holding leases
	// when the others ran dry may leave some items behind; finish them.
	for {
		ls := mustClaim(t, e.s, retry.MaxClaim, lease)
		if len(ls) == 0 {
			break
		}
		refs := make([]retry.LeaseRef, len(ls))
		for i, l := range ls {
			refs[i] = l.Ref()
		}
		if _, errs, err := e.s.SucceedAndClaim(ctx(t), refs, retry.ClaimParams{N: 1, Lease: lease}); err != nil || slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
			t.Fatalf("finishing: %v, %v", errs, err)
		}
	}
	st, err := e.open(t).Stats(ctx(t))
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.ByState["done"] != items || st.Total != items {
		t.Fatalf("stats %+v; want all %d items done", st.ByState, items)
	}
}
