package storetest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/internal/storeclock"
	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/retry"
)

// retryClock is a fake clock shared by every scheduler of one test.
type retryClock struct {
	mu  sync.Mutex
	now time.Time
}

func newRetryClock() *retryClock {
	return &retryClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *retryClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *retryClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// retryEnv is one test's database, clock and a scheduler on a first handle.
type retryEnv struct {
	h     *Harness
	clock *retryClock
	cfg   retry.Config
	s     *retry.Scheduler
}

func newRetryEnv(t *testing.T, newHarness NewFunc, cfg retry.Config) *retryEnv {
	t.Helper()
	e := &retryEnv{h: newHarness(t), clock: newRetryClock()}
	if cfg.Now == nil {
		cfg.Now = e.clock.Now
	}
	if cfg.Rand == nil {
		// The middle of [0, 1): jitter adds nothing, and retry quotas
		// round up only for fractions above one half.
		cfg.Rand = func() float64 { return 0.5 }
	}
	e.cfg = cfg
	e.s = e.open(t)
	return e
}

// open returns a scheduler on a new store handle (a separate node).
func (e *retryEnv) open(t testing.TB) *retry.Scheduler {
	t.Helper()
	st, ok := e.h.Open(t).(retry.Store)
	if !ok {
		t.Fatalf("%s store does not implement retry.Store", e.h.Engine)
	}
	s, err := retry.New(st, e.cfg)
	if err != nil {
		t.Fatalf("retry.New: %v", err)
	}
	return s
}

func mustAdd(t testing.TB, s *retry.Scheduler, items ...retry.NewItem) retry.AddResult {
	t.Helper()
	res, err := s.Add(ctx(t), items...)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	return res
}

func mustClaim(t testing.TB, s *retry.Scheduler, n int, lease time.Duration) []retry.Lease {
	t.Helper()
	ls, err := s.Claim(ctx(t), retry.ClaimParams{N: n, Lease: lease, Worker: "w"})
	if err != nil {
		t.Fatalf("Claim(%d): %v", n, err)
	}
	return ls
}

func mustGet(t testing.TB, s *retry.Scheduler, id string) retry.Item {
	t.Helper()
	it, err := s.Get(ctx(t), id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return it
}

func leaseIDs(ls []retry.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

func ids(prefix string, n int) []retry.NewItem {
	out := make([]retry.NewItem, n)
	for i := range out {
		out[i] = retry.NewItem{ID: fmt.Sprintf("%s%03d", prefix, i)}
	}
	return out
}

func testRetry(t *testing.T, newHarness NewFunc) {
	const lease = time.Minute

	t.Run("claim order, succeed, repeat", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e.s, retry.NewItem{ID: "low", Priority: -1}, retry.NewItem{ID: "a", Payload: []byte("pa")})
		e.clock.Advance(time.Second)
		mustAdd(t, e.s, retry.NewItem{ID: "b"}, retry.NewItem{ID: "high", Priority: 5})
		e.clock.Advance(time.Second)
		ls := mustClaim(t, e.s, 10, lease)
		if got, want := leaseIDs(ls), []string{"high", "a", "b", "low"}; !slices.Equal(got, want) {
			t.Fatalf("claim order %v, want %v (priority first, then oldest due)", got, want)
		}
		a := ls[1]
		if a.Attempt != 1 || !bytes.Equal(a.Payload, []byte("pa")) || !a.Until.Equal(e.clock.Now().Add(lease)) || a.Token == "" {
			t.Fatalf("lease %+v: want attempt 1, payload pa, until now+1m, a token", a)
		}
		tokens := map[string]bool{}
		for _, l := range ls {
			if tokens[l.Token] {
				t.Fatalf("token %q handed out twice in one claim", l.Token)
			}
			tokens[l.Token] = true
		}
		if again := mustClaim(t, e.s, 10, lease); len(again) != 0 {
			t.Fatalf("leased items claimed again: %v", leaseIDs(again))
		}
		if it := mustGet(t, e.s, "a"); it.State != retry.Leased || it.Worker != "w" || !it.LeaseUntil.Equal(a.Until) {
			t.Fatalf("after claim: %+v; want leased by w until %v", it, a.Until)
		}
		if err := e.s.Succeed(ctx(t), a.Ref()); err != nil {
			t.Fatalf("Succeed: %v", err)
		}
		done := mustGet(t, e.s, "a")
		if done.State != retry.Done || !done.NextAt.IsZero() || done.Worker != "" || done.Attempts != 1 {
			t.Fatalf("after succeed: %+v", done)
		}
		if err := e.s.Succeed(ctx(t), a.Ref()); err != nil {
			t.Fatalf("repeated Succeed: %v, want nil", err)
		}
		if again := mustGet(t, e.s, "a"); !again.UpdatedAt.Equal(done.UpdatedAt) || again.State != retry.Done {
			t.Fatalf("repeated Succeed changed the item: %+v", again)
		}
		if err := e.s.Fail(ctx(t), a.Ref(), "x", ""); !errors.Is(err, retry.ErrLeaseLost) {
			t.Fatalf("Fail after Succeed with the same token: %v, want ErrLeaseLost", err)
		}
		if _, err := e.s.Extend(ctx(t), a.Ref(), time.Minute); !errors.Is(err, retry.ErrLeaseLost) {
			t.Fatalf("Extend after Succeed: %v, want ErrLeaseLost", err)
		}
		// A token is unique across items: borrowing another item's token is stale.
		if err := e.s.Succeed(ctx(t), retry.LeaseRef{ID: "b", Token: ls[0].Token}); !errors.Is(err, retry.ErrLeaseLost) {
			t.Fatalf("Succeed with another item's token: %v, want ErrLeaseLost", err)
		}
	})

	t.Run("fail follows the class ladder and keeps history", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{
			Jitter:  -1,
			Classes: map[string]retry.ClassConfig{"no_peers": {Ladder: retry.Ladder{time.Minute, 5 * time.Minute}}},
		})
		mustAdd(t, e.s, retry.NewItem{ID: "x"})
		steps := []struct {
			class string
			wait  time.Duration
		}{
			{"no_peers", time.Minute},
			{"no_peers", 5 * time.Minute},
			{"no_peers", 5 * time.Minute},     // the last step repeats
			{"hash_mismatch", 24 * time.Hour}, // no ladder of its own: Default, step 4
		}
		for i, st := range steps {
			ls := mustClaim(t, e.s, 1, lease)
			if len(ls) != 1 || ls[0].Attempt != i+1 || ls[0].Failures != i {
				t.Fatalf("step %d: claim %+v; want attempt %d after %d failures", i, ls, i+1, i)
			}
			failedAt := e.clock.Now()
			if err := e.s.Fail(ctx(t), ls[0].Ref(), st.class, fmt.Sprintf("try %d", i)); err != nil {
				t.Fatalf("step %d: Fail: %v", i, err)
			}
			it := mustGet(t, e.s, "x")
			if it.State != retry.Scheduled || !it.NextAt.Equal(failedAt.Add(st.wait)) || it.LastClass != st.class || it.Failures != i+1 {
				t.Fatalf("step %d: %+v; want scheduled at failure+%v, class %s", i, it, st.wait, st.class)
			}
			e.clock.Advance(st.wait - time.Second)
			if ls := mustClaim(t, e.s, 1, lease); len(ls) != 0 {
				t.Fatalf("step %d: claimed %v a second before it was due", i, leaseIDs(ls))
			}
			e.clock.Advance(time.Second)
		}
		it := mustGet(t, e.s, "x")
		if len(it.History) != len(steps) || it.History[0].Class != "no_peers" || it.History[0].Note != "try 0" ||
			it.History[3].Class != "hash_mismatch" {
			t.Fatalf("history %+v", it.History)
		}
		// Re-adding does not reset anything, but a higher priority is taken.
		if res := mustAdd(t, e.s, retry.NewItem{ID: "x", Priority: 4}); res.Added != 0 || res.Existing != 1 {
			t.Fatalf("re-add: %+v", res)
		}
		mustAdd(t, e.s, retry.NewItem{ID: "x", Priority: 2})
		again := mustGet(t, e.s, "x")
		if again.Priority != 4 || again.Failures != 4 || len(again.History) != 4 || !again.NextAt.Equal(it.NextAt) {
			t.Fatalf("after re-add: %+v; want priority 4 and the same schedule and history", again)
		}
		// The history keeps only the newest entries.
		for i := range retry.HistoryLen + 2 {
			e.clock.Advance(31 * 24 * time.Hour)
			ls := mustClaim(t, e.s, 1, lease)
			if len(ls) != 1 {
				t.Fatalf("history fill %d: nothing claimed", i)
			}
			if err := e.s.Fail(ctx(t), ls[0].Ref(), "no_peers", fmt.Sprintf("fill %d", i)); err != nil {
				t.Fatal(err)
			}
		}
		h := mustGet(t, e.s, "x").History
		if len(h) != retry.HistoryLen || h[len(h)-1].Note != fmt.Sprintf("fill %d", retry.HistoryLen+1) {
			t.Fatalf("history after many failures: %d entries, last %+v", len(h), h[len(h)-1])
		}
	})

	t.Run("stale token after expiry and re-claim", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e.s, retry.NewItem{ID: "x"})
		first := mustClaim(t, e.s, 1, lease)[0]
		e.clock.Advance(lease)
		other := e.open(t)
		second := mustClaim(t, other, 1, lease)
		if len(second) != 1 || second[0].Token == first.Token || second[0].Attempt != 2 {
			t.Fatalf("re-claim after expiry: %+v", second)
		}
		before := mustGet(t, e.s, "x")
		for name, op := range map[string]func() error{
			"succeed": func() error { return e.s.Succeed(ctx(t), first.Ref()) },
			"fail":    func() error { return e.s.Fail(ctx(t), first.Ref(), "x", "") },
			"release": func() error { return e.s.Release(ctx(t), first.Ref()) },
			"extend":  func() error { _, err := e.s.Extend(ctx(t), first.Ref(), lease); return err },
		} {
			if err := op(); !errors.Is(err, retry.ErrLeaseLost) {
				t.Errorf("%s with the stale token: %v, want ErrLeaseLost", name, err)
			}
		}
		if after := mustGet(t, e.s, "x"); !after.UpdatedAt.Equal(before.UpdatedAt) || after.State != retry.Leased {
			t.Fatalf("stale operations changed the item: %+v", after)
		}
		if err := other.Succeed(ctx(t), second[0].Ref()); err != nil {
			t.Fatalf("Succeed with the live token: %v", err)
		}
	})

	t.Run("tokens are secret, and no other token settles a lease", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e.s, ids("k", 3)...)
		ls := mustClaim(t, e.s, 3, lease)
		seen := map[string]bool{}
		var lastTerm int64
		for _, l := range ls {
			if len(l.Token) < 32 || seen[l.Token] {
				t.Fatalf("token %q: want at least 32 hex digits (128 bits), unique", l.Token)
			}
			seen[l.Token] = true
			lastTerm = max(lastTerm, l.Term)
			if l.Term <= 0 {
				t.Fatalf("lease %+v has no term", l)
			}
		}
		// An earlier lease on the same item: release, claim again, and the
		// first token is worthless although nobody else holds the item.
		first := ls[0]
		if err := e.s.Release(ctx(t), first.Ref()); err != nil {
			t.Fatal(err)
		}
		second := mustClaim(t, e.s, 1, lease)
		if len(second) != 1 || second[0].ID != first.ID || second[0].Token == first.Token || second[0].Term <= lastTerm {
			t.Fatalf("re-claim %+v after %+v; want a new token and a higher term", second, first)
		}
		before := mustGet(t, e.s, first.ID)
		forged := strings.Repeat("0", len(first.Token))
		for _, tok := range []string{first.Token, ls[1].Token, forged} {
			ref := retry.LeaseRef{ID: first.ID, Token: tok}
			for name, op := range map[string]func() error{
				"succeed": func() error { return e.s.Succeed(ctx(t), ref) },
				"fail":    func() error { return e.s.Fail(ctx(t), ref, "x", "") },
				"release": func() error { return e.s.Release(ctx(t), ref) },
				"extend":  func() error { _, err := e.s.Extend(ctx(t), ref, lease); return err },
				"settle": func() error {
					errs, err := e.s.Settle(ctx(t), []retry.Outcome{{Lease: ref, Op: retry.OpSucceed}})
					if err != nil {
						return err
					}
					return errs[0]
				},
			} {
				if err := op(); !errors.Is(err, retry.ErrLeaseLost) {
					t.Errorf("%s with token %.8s…: %v, want ErrLeaseLost", name, tok, err)
				}
			}
		}
		if after := mustGet(t, e.s, first.ID); !after.UpdatedAt.Equal(before.UpdatedAt) || after.State != retry.Leased {
			t.Fatalf("foreign tokens changed the item: %+v", after)
		}
		if err := e.s.Succeed(ctx(t), second[0].Ref()); err != nil {
			t.Fatalf("Succeed with the live token: %v", err)
		}
	})

	t.Run("late success is taken while nobody re-claimed", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e.s, retry.NewItem{ID: "slow"})
		l := mustClaim(t, e.s, 1, lease)[0]
		e.clock.Advance(2 * lease)
		// A claim that promotes the expired item but hands out another one.
		mustAdd(t, e.s, retry.NewItem{ID: "urgent", Priority: 9})
		if got := leaseIDs(mustClaim(t, e.s, 1, lease)); !slices.Equal(got, []string{"urgent"}) {
			t.Fatalf("claim %v, want [urgent]", got)
		}
		if it := mustGet(t, e.s, "slow"); it.State != retry.Scheduled || it.Expiries != 1 {
			t.Fatalf("expired item %+v; want scheduled (due again) with one expiry", it)
		}
		if err := e.s.Succeed(ctx(t), l.Ref()); err != nil {
			t.Fatalf("late Succeed: %v, want it accepted", err)
		}
		if it := mustGet(t, e.s, "slow"); it.State != retry.Done || it.Expiries != 0 {
			t.Fatalf("after late success: %+v", it)
		}
	})

	t.Run("third expiry in a row is a lease_expired failure", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1})
		mustAdd(t, e.s, retry.NewItem{ID: "poison"})
		var last retry.Lease
		for i := range 3 {
			ls := mustClaim(t, e.s, 1, lease)
			if len(ls) != 1 || ls[0].Failures != 0 || ls[0].Attempt != i+1 {
				t.Fatalf("claim %d: %+v", i, ls)
			}
			last = ls[0]
			e.clock.Advance(lease)
		}
		if ls := mustClaim(t, e.s, 1, lease); len(ls) != 0 {
			t.Fatalf("the third expiry handed the item out again: %v", leaseIDs(ls))
		}
		it := mustGet(t, e.s, "poison")
		now := e.clock.Now()
		if it.State != retry.Scheduled || it.Failures != 1 || it.LastClass != retry.ClassLeaseExpired ||
			!it.NextAt.Equal(now.Add(retry.DefaultLadder[0])) || it.Expiries != 0 || len(it.History) != 1 {
			t.Fatalf("after the third expiry: %+v; want one lease_expired failure due in 30m", it)
		}
		if err := e.s.Succeed(ctx(t), last.Ref()); !errors.Is(err, retry.ErrLeaseLost) {
			t.Fatalf("Succeed on a lease counted as expired: %v, want ErrLeaseLost", err)
		}
		// A settled lease resets the count: two more expiries are not a failure.
		e.clock.Advance(retry.DefaultLadder[0])
		l := mustClaim(t, e.s, 1, lease)[0]
		if err := e.s.Release(ctx(t), l.Ref()); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if ls := mustClaim(t, e.s, 1, lease); len(ls) != 1 {
				t.Fatalf("claim after release: %v", ls)
			}
			e.clock.Advance(lease)
		}
		if ls := mustClaim(t, e.s, 1, lease); len(ls) != 1 {
			t.Fatalf("two expiries after a release counted as a failure: %v", ls)
		}
	})

	t.Run("release does not count, extend keeps the lease", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e.s, retry.NewItem{ID: "x"})
		l := mustClaim(t, e.s, 1, lease)[0]
		if err := e.s.Release(ctx(t), l.Ref()); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Release(ctx(t), l.Ref()); err != nil {
			t.Fatalf("repeated Release: %v", err)
		}
		if it := mustGet(t, e.s, "x"); it.State != retry.Pending || it.Attempts != 0 || !it.NextAt.Equal(e.clock.Now()) {
			t.Fatalf("after release: %+v; want pending, no attempts, due now", it)
		}
		l = mustClaim(t, e.s, 1, lease)[0]
		if l.Attempt != 1 {
			t.Fatalf("attempt after a release: %d, want 1", l.Attempt)
		}
		e.clock.Advance(30 * time.Second)
		until, err := e.s.Extend(ctx(t), l.Ref(), 10*time.Minute)
		if err != nil || !until.Equal(e.clock.Now().Add(10*time.Minute)) {
			t.Fatalf("Extend: %v, %v", until, err)
		}
		e.clock.Advance(5 * time.Minute)
		if ls := mustClaim(t, e.s, 1, lease); len(ls) != 0 {
			t.Fatalf("extended lease handed out: %v", leaseIDs(ls))
		}
		e.clock.Advance(5 * time.Minute)
		if ls := mustClaim(t, e.s, 1, lease); len(ls) != 1 || ls[0].Attempt != 2 {
			t.Fatalf("after the extension ran out: %+v", ls)
		}
	})

	t.Run("retry share caps retries while new items wait", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{
			Jitter:  -1,
			Default: []time.Duration{time.Second},
		})
		mustAdd(t, e.s, ids("old", 20)...)
		var out []retry.Outcome
		for _, l := range mustClaim(t, e.s, 20, lease) {
			out = append(out, retry.Outcome{Lease: l.Ref(), Op: retry.OpFail, Class: "timeout"})
		}
		if errs, err := e.s.Settle(ctx(t), out); err != nil || len(errs) != 20 || errors.Join(errs...) != nil {
			t.Fatalf("Settle: %v %v", errs, err)
		}
		e.clock.Advance(2 * time.Second)
		mustAdd(t, e.s, ids("new", 20)...)
		// The random draw is 0.5: a fraction above one half rounds up.
		steps := []struct{ n, fresh, old int }{
			{10, 7, 3}, // 0.3×10 = 3
			{5, 4, 1},  // 1.5 rounds down
			{12, 8, 4}, // 3.6 rounds up
			{10, 1, 9}, // one new item left: retries fill the rest
			{10, 0, 3}, // only retries left
			{10, 0, 0},
		}
		for i, st := range steps {
			fresh, old := 0, 0
			for _, l := range mustClaim(t, e.s, st.n, lease) {
				if l.Attempt == 1 {
					fresh++
				} else {
					old++
				}
			}
			if fresh != st.fresh || old != st.old {
				t.Fatalf("step %d, claim of %d: %d new and %d retries; want %d and %d", i, st.n, fresh, old, st.fresh, st.old)
			}
		}
	})

	t.Run("observe pulls forward, boosts, and leaves leased and done alone", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1, ObserveMaxPriority: 3})
		mustAdd(t, e.s, retry.NewItem{ID: "dormant"}, retry.NewItem{ID: "busy"}, retry.NewItem{ID: "fin"})
		ls := mustClaim(t, e.s, 3, lease)
		byID := map[string]retry.Lease{}
		for _, l := range ls {
			byID[l.ID] = l
		}
		if err := e.s.Fail(ctx(t), byID["dormant"].Ref(), "no_peers", ""); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Succeed(ctx(t), byID["fin"].Ref()); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		now := e.clock.Now()
		res, err := e.s.Observe(ctx(t), "dormant", retry.ObserveParams{})
		if err != nil || res.Added || res.State != retry.Scheduled || res.Priority != 1 || !res.NextAt.Equal(now.Add(10*time.Minute)) {
			t.Fatalf("Observe: %+v, %v; want priority 1, due in 10m", res, err)
		}
		for range 4 {
			e.clock.Advance(time.Minute)
			if _, err := e.s.Observe(ctx(t), "dormant", retry.ObserveParams{}); err != nil {
				t.Fatal(err)
			}
		}
		it := mustGet(t, e.s, "dormant")
		if it.Priority != 3 || it.Observations != 5 || !it.NextAt.Equal(now.Add(10*time.Minute)) || !it.LastSeen.Equal(e.clock.Now()) {
			t.Fatalf("after 5 sightings: %+v; want priority capped at 3, next_at kept at the first pull", it)
		}
		for _, id := range []string{"busy", "fin"} {
			before := mustGet(t, e.s, id)
			if _, err := e.s.Observe(ctx(t), id, retry.ObserveParams{Boost: 2}); err != nil {
				t.Fatal(err)
			}
			after := mustGet(t, e.s, id)
			if after.State != before.State || after.Priority != before.Priority || !after.LeaseUntil.Equal(before.LeaseUntil) || after.Observations != 1 {
				t.Fatalf("%s: observing changed %+v into %+v", id, before, after)
			}
		}
		if _, err := e.s.Observe(ctx(t), "ghost", retry.ObserveParams{}); !errors.Is(err, retry.ErrNotFound) {
			t.Fatalf("Observe unknown: %v, want ErrNotFound", err)
		}
		res, err = e.s.Observe(ctx(t), "ghost", retry.ObserveParams{AddIfMissing: true, Priority: 2, Payload: []byte("p")})
		if err != nil || !res.Added || res.State != retry.Pending {
			t.Fatalf("Observe with AddIfMissing: %+v, %v", res, err)
		}
		if ls := mustClaim(t, e.s, 1, lease); len(ls) != 1 || ls[0].ID != "ghost" || string(ls[0].Payload) != "p" {
			t.Fatalf("the added item is not due at once: %+v", ls)
		}
		res, err = e.s.Observe(ctx(t), "ghost", retry.ObserveParams{AddIfMissing: true})
		if err != nil || res.Added {
			t.Fatalf("second Observe with AddIfMissing: %+v, %v; want not added", res, err)
		}
	})

	t.Run("observe many in one call", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1})
		mustAdd(t, e.s, retry.NewItem{ID: "b"}, retry.NewItem{ID: "a", NotBefore: e.clock.Now().Add(time.Hour)})
		res, err := e.s.ObserveMany(ctx(t), []string{"a", "zz", "b", "a"}, retry.ObserveParams{Boost: 2})
		if err != nil {
			t.Fatal(err)
		}
		now := e.clock.Now()
		if len(res) != 4 || res[0].ID != "a" || res[0].Priority != 2 || !res[0].NextAt.Equal(now.Add(10*time.Minute)) ||
			!res[1].Unknown || res[1].ID != "zz" || res[2].Priority != 2 || !res[2].NextAt.Equal(now) || res[3] != res[0] {
			t.Fatalf("ObserveMany: %+v", res)
		}
		if it := mustGet(t, e.s, "a"); it.Observations != 1 {
			t.Fatalf("an id repeated in one call counted %d times, want once", it.Observations)
		}
		res, err = e.s.ObserveMany(ctx(t), []string{"zz", "b", "yy"}, retry.ObserveParams{AddIfMissing: true, Priority: 1})
		if err != nil || !res[0].Added || res[1].Added || !res[2].Added || res[0].State != retry.Pending || res[0].Priority != 1 {
			t.Fatalf("ObserveMany with AddIfMissing: %+v, %v", res, err)
		}
		if st, err := e.s.Stats(ctx(t)); err != nil || st.Total != 4 {
			t.Fatalf("stats after adding two by observation: %+v, %v", st, err)
		}
		if _, err := e.s.ObserveMany(ctx(t), []string{"ok", ""}, retry.ObserveParams{AddIfMissing: true}); !errors.Is(err, retry.ErrInvalid) {
			t.Fatalf("an empty id in the batch: %v, want ErrInvalid", err)
		}
		if _, err := e.s.Get(ctx(t), "ok"); !errors.Is(err, retry.ErrNotFound) {
			t.Fatalf("a rejected batch added an item: %v", err)
		}
	})

	t.Run("concurrent overlapping sightings from two nodes", func(t *testing.T) {
		t.Parallel()
		// Shared writes of one scheduler run side by side, and so do the
		// other node's; rows they share are locked in one order, so no
		// write deadlocks, and every sighting is counted once.
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1})
		ids := make([]string, 12)
		for i := range ids {
			ids[i] = fmt.Sprintf("o%02d", i)
			mustAdd(t, e.s, retry.NewItem{ID: ids[i], NotBefore: e.clock.Now().Add(time.Hour)})
		}
		nodes := []*retry.Scheduler{e.s, e.open(t)}
		var mu sync.Mutex
		want := map[string]int{}
		var wg sync.WaitGroup
		for g := range 8 {
			s := nodes[g%2]
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for i := range 30 {
					var seen []string
					if i%5 == 4 {
						seen = slices.Clone(ids)
						r.Shuffle(len(seen), func(a, b int) { seen[a], seen[b] = seen[b], seen[a] })
						seen = seen[:6]
						if _, err := s.ObserveMany(ctx(t), seen, retry.ObserveParams{}); err != nil {
							t.Errorf("ObserveMany: %v", err)
							return
						}
					} else {
						seen = []string{ids[r.IntN(len(ids))]}
						if _, err := s.Observe(ctx(t), seen[0], retry.ObserveParams{}); err != nil {
							t.Errorf("Observe: %v", err)
							return
						}
					}
					mu.Lock()
					for _, id := range seen {
						want[id]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for _, id := range ids {
			if it := mustGet(t, e.s, id); it.Observations != want[id] {
				t.Errorf("%s: %d observations, want %d", id, it.Observations, want[id])
			}
		}
	})

	t.Run("get, forget, stats", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1})
		big := bytes.Repeat([]byte{0, 1, 2, 0xff}, retry.MaxPayloadBytes/4)
		mustAdd(t, e.s, retry.NewItem{ID: "big", Payload: big}, retry.NewItem{ID: "later", NotBefore: e.clock.Now().Add(time.Hour)})
		mustAdd(t, e.s, ids("n", 4)...)
		if it := mustGet(t, e.s, "big"); !bytes.Equal(it.Payload, big) {
			t.Fatalf("payload of %d bytes came back as %d", len(big), len(it.Payload))
		}
		ls := mustClaim(t, e.s, 3, lease)
		_ = e.s.Fail(ctx(t), ls[0].Ref(), "timeout", "")
		_ = e.s.Fail(ctx(t), ls[1].Ref(), "timeout", "")
		_ = e.s.Succeed(ctx(t), ls[2].Ref())
		e.clock.Advance(5 * time.Second)
		st, err := e.s.Stats(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"pending": 3, "scheduled": 2, "leased": 0, "done": 1}
		if st.Total != 6 || fmt.Sprint(st.ByState) != fmt.Sprint(want) || st.ByClass["timeout"] != 2 || st.DueNow != 2 ||
			st.OldestDueLag != 5*time.Second {
			t.Fatalf("stats %+v; want total 6, %v, timeout 2, 2 due for 5s", st, want)
		}
		if err := e.s.Forget(ctx(t), ls[0].ID); err != nil {
			t.Fatal(err)
		}
		if st, err := e.s.Stats(ctx(t)); err != nil || st.Total != 5 || st.ByState["scheduled"] != 1 || st.ByClass["timeout"] != 1 {
			t.Fatalf("stats after Forget: %+v, %v; want 5 items, 1 scheduled for timeout", st, err)
		}
		if _, err := e.s.Get(ctx(t), ls[0].ID); !errors.Is(err, retry.ErrNotFound) {
			t.Fatalf("Get after Forget: %v", err)
		}
		if err := e.s.Forget(ctx(t), ls[0].ID); !errors.Is(err, retry.ErrNotFound) {
			t.Fatalf("second Forget: %v", err)
		}
		if err := e.s.Succeed(ctx(t), ls[0].Ref()); !errors.Is(err, retry.ErrNotFound) {
			t.Fatalf("Succeed on a forgotten item: %v", err)
		}
	})

	t.Run("bad input changes nothing", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		bad := [][]retry.NewItem{
			{{ID: "ok"}, {ID: ""}},
			{{ID: "ok"}, {ID: string(make([]byte, retry.MaxIDBytes+1))}},
			{{ID: "ok"}, {ID: "big", Payload: make([]byte, retry.MaxPayloadBytes+1)}},
			{{ID: "ok"}, {ID: "bad\xffutf8"}},
			{{ID: "ok"}, {ID: "nul\x00"}},
			{{ID: "ok"}, {ID: "bell\a"}},
			{{ID: "ok"}, {ID: "c1\u0085"}},
			{{ID: "ok", Priority: retry.MaxPriority + 1}},
			{{ID: "ok", NotBefore: e.clock.Now().Add(200 * 365 * 24 * time.Hour)}},
		}
		for i, items := range bad {
			if _, err := e.s.Add(ctx(t), items...); !errors.Is(err, retry.ErrInvalid) {
				t.Errorf("bad batch %d: %v, want ErrInvalid", i, err)
			}
		}
		if _, err := e.s.Get(ctx(t), "ok"); !errors.Is(err, retry.ErrNotFound) {
			t.Fatalf("a rejected batch wrote an item: %v", err)
		}
		mustAdd(t, e.s, retry.NewItem{ID: "x"})
		l := mustClaim(t, e.s, 1, lease)[0]
		for name, err := range map[string]error{
			"claim N=0":                 func() error { _, err := e.s.Claim(ctx(t), retry.ClaimParams{N: 0, Lease: lease}); return err }(),
			"claim lease 0":             func() error { _, err := e.s.Claim(ctx(t), retry.ClaimParams{N: 1}); return err }(),
			"fail no class":             e.s.Fail(ctx(t), l.Ref(), "", "note"),
			"fail class with a newline": e.s.Fail(ctx(t), l.Ref(), "time\nout", ""),
			"fail note with a NUL":      e.s.Fail(ctx(t), l.Ref(), "timeout", "a\x00b"),
			"claim worker with ESC": func() error {
				_, err := e.s.Claim(ctx(t), retry.ClaimParams{N: 1, Lease: lease, Worker: "w\x1b"})
				return err
			}(),
			"bad token":    e.s.Succeed(ctx(t), retry.LeaseRef{ID: "x", Token: "01"}),
			"extend 0":     func() error { _, err := e.s.Extend(ctx(t), l.Ref(), 0); return err }(),
			"extend 500ns": func() error { _, err := e.s.Extend(ctx(t), l.Ref(), 500); return err }(),
			"claim lease 1ns": func() error {
				_, err := e.s.Claim(ctx(t), retry.ClaimParams{N: 1, Lease: 1})
				return err
			}(),
			"settle bad op": func() error {
				_, err := e.s.Settle(ctx(t), []retry.Outcome{{Lease: l.Ref(), Op: retry.OpSucceed}, {Lease: l.Ref(), Op: 99}})
				return err
			}(),
		} {
			if !errors.Is(err, retry.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		if it := mustGet(t, e.s, "x"); it.State != retry.Leased {
			t.Fatalf("rejected calls changed the item: %+v", it)
		}
	})

	t.Run("settle batch reports per outcome", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{})
		mustAdd(t, e.s, ids("s", 4)...)
		ls := mustClaim(t, e.s, 4, lease)
		errs, err := e.s.Settle(ctx(t), []retry.Outcome{
			{Lease: ls[0].Ref(), Op: retry.OpSucceed},
			{Lease: ls[1].Ref(), Op: retry.OpFail, Class: "timeout", Note: string(bytes.Repeat([]byte("é"), 300))},
			{Lease: ls[2].Ref(), Op: retry.OpRelease},
			{Lease: ls[0].Ref(), Op: retry.OpSucceed},                                    // repeat: harmless
			{Lease: ls[1].Ref(), Op: retry.OpSucceed},                                    // other op on a settled lease
			{Lease: retry.LeaseRef{ID: "s003", Token: ls[0].Token}, Op: retry.OpSucceed}, // wrong token
			{Lease: retry.LeaseRef{ID: "nope", Token: ls[0].Token}, Op: retry.OpSucceed},
			{Lease: ls[3].Ref(), Op: retry.OpExtend, Extend: time.Hour},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []error{nil, nil, nil, nil, retry.ErrLeaseLost, retry.ErrLeaseLost, retry.ErrNotFound, nil}
		for i := range want {
			if !errors.Is(errs[i], want[i]) || (want[i] == nil && errs[i] != nil) {
				t.Errorf("outcome %d: %v, want %v", i, errs[i], want[i])
			}
		}
		states := []retry.State{retry.Done, retry.Scheduled, retry.Pending, retry.Leased}
		for i, l := range ls {
			if it := mustGet(t, e.s, l.ID); it.State != states[i] {
				t.Errorf("%s: %v, want %v", l.ID, it.State, states[i])
			}
		}
		h := mustGet(t, e.s, ls[1].ID).History
		if len(h) != 1 || len(h[0].Note) > retry.MaxNoteBytes || len(h[0].Note) < retry.MaxNoteBytes-1 {
			t.Fatalf("note kept as %d bytes, want cut to about %d", len(h[0].Note), retry.MaxNoteBytes)
		}
	})

	t.Run("an odd class refuses its own outcome only", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1})
		mustAdd(t, e.s, ids("o", 4)...)
		ls := mustClaim(t, e.s, 4, lease)
		timeout := string(failure.Classify(context.DeadlineExceeded))
		errs, err := e.s.Settle(ctx(t), []retry.Outcome{
			{Lease: ls[0].Ref(), Op: retry.OpSucceed},
			{Lease: ls[1].Ref(), Op: retry.OpFail, Class: "\x04"},
			{Lease: ls[2].Ref(), Op: retry.OpFail, Class: timeout, Note: "read: i/o timeout"},
			{Lease: ls[3].Ref(), Op: retry.OpFail, Class: "timeout", Note: "two\nlines"},
		})
		if err != nil {
			t.Fatalf("Settle refused the whole batch: %v", err)
		}
		var ie *retry.InputError
		if errs[0] != nil || errs[2] != nil || !errors.As(errs[1], &ie) || ie.Field != "class" ||
			!errors.As(errs[3], &ie) || ie.Field != "note" {
			t.Fatalf("per-outcome results %v; want nil, class refused, nil, note refused", errs)
		}
		for i, want := range []retry.State{retry.Done, retry.Leased, retry.Scheduled, retry.Leased} {
			if it := mustGet(t, e.s, ls[i].ID); it.State != want || (i == 2 && it.LastClass != "timeout") {
				t.Errorf("%s: %+v; want %v", ls[i].ID, it, want)
			}
		}
		// The refused lease is intact: the worker may send a good class.
		if err := e.s.Fail(ctx(t), ls[1].Ref(), "no_peers", ""); err != nil {
			t.Fatalf("Fail after the refused outcome: %v", err)
		}
	})

	t.Run("a class escalates by distinct sources", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1, Classes: map[string]retry.ClassConfig{
			"hash_mismatch": {Ladder: retry.Ladder{24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour}, Escalate: retry.BySources},
		}})
		mustAdd(t, e.s, retry.NewItem{ID: "h"})
		steps := []struct {
			source string
			wait   time.Duration
		}{
			{"tracker-a", 24 * time.Hour},
			{"tracker-a", 24 * time.Hour},
			{"peer-b", 7 * 24 * time.Hour},
			{"tracker-a", 7 * 24 * time.Hour},
			{"dht-c", 30 * 24 * time.Hour},
			{"dht-d", 30 * 24 * time.Hour},
		}
		for i, st := range steps {
			ls := mustClaim(t, e.s, 1, lease)
			if len(ls) != 1 {
				t.Fatalf("step %d: nothing claimed", i)
			}
			errs, err := e.s.Settle(ctx(t), []retry.Outcome{{Lease: ls[0].Ref(), Op: retry.OpFail, Class: "hash_mismatch", Source: st.source}})
			if err != nil || errs[0] != nil {
				t.Fatalf("step %d: %v %v", i, errs, err)
			}
			if it := mustGet(t, e.s, "h"); !it.NextAt.Equal(e.clock.Now().Add(st.wait)) {
				t.Fatalf("step %d (%s): due in %v, want %v", i, st.source, it.NextAt.Sub(e.clock.Now()), st.wait)
			}
			e.clock.Advance(st.wait)
		}
		it := mustGet(t, e.s, "h")
		if len(it.Sources) != 4 || it.Sources[3].Source != "dht-d" || it.Sources[3].Class != "hash_mismatch" || it.Failures != 6 {
			t.Fatalf("kept sources %+v", it.Sources)
		}
	})

	t.Run("sightings name their source and raise priority once each", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1})
		mustAdd(t, e.s, retry.NewItem{ID: "d", NotBefore: e.clock.Now().Add(24 * time.Hour)})
		for i, st := range []struct {
			source   string
			priority int
		}{{"dht-1", 1}, {"dht-1", 1}, {"dht-2", 2}, {"dht-1", 2}} {
			e.clock.Advance(time.Minute)
			res, err := e.s.Observe(ctx(t), "d", retry.ObserveParams{Source: st.source})
			if err != nil || res.Priority != st.priority || res.Added || res.State != retry.Pending {
				t.Fatalf("sighting %d from %s: %+v, %v; want priority %d", i, st.source, res, err, st.priority)
			}
		}
		it := mustGet(t, e.s, "d")
		if it.Observations != 4 || len(it.Sources) != 2 || it.Sources[1].Source != "dht-1" || !it.Sources[1].At.Equal(e.clock.Now()) ||
			!it.NextAt.Before(e.clock.Now().Add(10*time.Minute)) {
			t.Fatalf("after the sightings: %+v", it)
		}
		res, err := e.s.ObserveMany(ctx(t), []string{"new", "d"}, retry.ObserveParams{Source: "dht-3", AddIfMissing: true, Priority: 4})
		if err != nil || !res[0].Added || res[0].Priority != 4 || res[0].State != retry.Pending || res[1].Added || res[1].Priority != 3 {
			t.Fatalf("ObserveMany with a source: %+v, %v", res, err)
		}
		if n := mustGet(t, e.s, "new"); n.Observations != 1 || len(n.Sources) != 1 || !n.NextAt.Equal(e.clock.Now()) {
			t.Fatalf("added by a sighting: %+v", n)
		}
		if res, err := e.s.ObserveMany(ctx(t), []string{"ghost"}, retry.ObserveParams{Source: "dht-3"}); err != nil || !res[0].Unknown {
			t.Fatalf("an unknown id with a source: %+v, %v", res, err)
		}
		if _, err := e.s.Observe(ctx(t), "d", retry.ObserveParams{Source: "bad\x00"}); !errors.Is(err, retry.ErrInvalid) {
			t.Fatalf("a source with a NUL: %v, want ErrInvalid", err)
		}
		if st, err := e.s.Stats(ctx(t)); err != nil || st.Total != 2 {
			t.Fatalf("stats: %+v, %v", st, err)
		}
	})

	t.Run("retention deletes old done items and nothing else", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1, KeepDone: 30 * 24 * time.Hour})
		day := 24 * time.Hour
		// Forty days ago: one item each left pending, scheduled after a
		// failure, leased (its lease long run out), and done.
		mustAdd(t, e.s, ids("old", 4)...)
		ls := mustClaim(t, e.s, 3, lease)
		if err := e.s.Fail(ctx(t), ls[0].Ref(), "not_found", ""); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Succeed(ctx(t), ls[1].Ref()); err != nil {
			t.Fatal(err)
		}
		// ls[2] stays leased; old003 stays pending.
		// Far in the future, so that the failed item waits unclaimed.
		if _, err := e.s.Add(ctx(t), retry.NewItem{ID: "later", NotBefore: e.clock.Now().Add(365 * day)}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(39 * day)
		mustAdd(t, e.s, retry.NewItem{ID: "recent", Priority: 9})
		r := mustClaim(t, e.s, 1, lease)
		if len(r) != 1 || r[0].ID != "recent" {
			t.Fatalf("claimed %v, want [recent]", leaseIDs(r))
		}
		for _, l := range r {
			if err := e.s.Succeed(ctx(t), l.Ref()); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(day)
		before := map[string]retry.Item{}
		for _, id := range []string{"old000", "old002", "old003", "later"} {
			before[id] = mustGet(t, e.s, id)
		}
		n, err := e.s.Prune(ctx(t))
		if err != nil || n != 1 {
			t.Fatalf("Prune: %d, %v; want the one old done item", n, err)
		}
		if _, err := e.s.Get(ctx(t), ls[1].ID); !errors.Is(err, retry.ErrNotFound) {
			t.Fatalf("the old done item is still there: %v", err)
		}
		for id, want := range before {
			if got := mustGet(t, e.s, id); got.State != want.State || !got.UpdatedAt.Equal(want.UpdatedAt) {
				t.Errorf("%s: %v changed to %v by retention", id, want.State, got.State)
			}
		}
		for _, l := range r {
			if it := mustGet(t, e.s, l.ID); it.State != retry.Done {
				t.Errorf("%s done a day ago: %v", l.ID, it.State)
			}
		}
		st, err := e.s.Stats(ctx(t))
		if err != nil || st.Pruned != 1 || !st.PrunedAt.Equal(e.clock.Now()) || st.Total != 5 {
			t.Fatalf("stats after retention: %+v, %v; want 1 pruned now, 5 items left", st, err)
		}
		if n, err := e.s.Prune(ctx(t)); err != nil || n != 0 {
			t.Fatalf("second Prune: %d, %v", n, err)
		}
		// Everything done, more than a batch of it.
		const many = 2500
		mustAdd(t, e.s, ids("bulk", many)...)
		for {
			ls := mustClaim(t, e.s, retry.MaxClaim, lease)
			if len(ls) == 0 {
				break
			}
			out := make([]retry.Outcome, len(ls))
			for i, l := range ls {
				out[i] = retry.Outcome{Lease: l.Ref(), Op: retry.OpSucceed}
			}
			if _, err := e.s.Settle(ctx(t), out); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(31 * day)
		n, err = e.s.Prune(ctx(t))
		if st, _ := e.s.Stats(ctx(t)); err != nil || n < many || st.ByState["done"] != 0 || st.Pruned != int64(1+n) {
			t.Fatalf("bulk Prune: %d, %v; stats %+v", n, err, st)
		}
		off, err := retry.New(e.h.Open(t).(retry.Store), retry.Config{KeepDone: -1, Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := off.Prune(ctx(t)); n != 0 || err != nil {
			t.Fatalf("Prune with retention off: %d, %v", n, err)
		}
	})

	t.Run("state survives reopening", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1})
		mustAdd(t, e.s, retry.NewItem{ID: "x", Priority: 3, Payload: []byte("keep")})
		l := mustClaim(t, e.s, 1, lease)[0]
		if err := e.s.Fail(ctx(t), l.Ref(), "no_peers", "gone"); err != nil {
			t.Fatal(err)
		}
		want := mustGet(t, e.s, "x")
		got := mustGet(t, e.open(t), "x")
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Fatalf("reopened:\n%+v\nwant\n%+v", got, want)
		}
	})

	t.Run("a waiting claim wakes when another handle adds or releases", func(t *testing.T) {
		t.Parallel()
		// The poll is far longer than the test may take: only a wake-up
		// can end the wait in time.
		const poll = time.Minute
		e := newRetryEnv(t, newHarness, retry.Config{ClaimPoll: poll})
		other := e.open(t)
		type result struct {
			ls  []retry.Lease
			err error
			at  time.Time
		}
		wait := func() <-chan result {
			out := make(chan result, 1)
			go func() {
				ls, err := e.s.Claim(ctx(t), retry.ClaimParams{N: 1, Lease: lease, Wait: 2 * time.Minute})
				out <- result{ls, err, time.Now()}
			}()
			waitfor.True(t, 30*time.Second, "the claim waits", func() bool { return e.s.Waiting() == 1 })
			return out
		}
		got := func(ch <-chan result, since time.Time, id string) retry.Lease {
			t.Helper()
			select {
			case r := <-ch:
				if r.err != nil || len(r.ls) != 1 || r.ls[0].ID != id {
					t.Fatalf("waiting claim: %+v, %v; want %s", r.ls, r.err, id)
				}
				if d := r.at.Sub(since); d > poll/6 {
					t.Fatalf("the waiting claim took %v after the change; its poll is %v", d, poll)
				}
				return r.ls[0]
			case <-time.After(poll / 2):
				t.Fatalf("the waiting claim was not woken within %v", poll/2)
			}
			return retry.Lease{}
		}
		ch := wait()
		added := time.Now()
		mustAdd(t, other, retry.NewItem{ID: "fresh"})
		l := got(ch, added, "fresh")
		ch = wait()
		released := time.Now()
		if err := other.Release(ctx(t), l.Ref()); err != nil {
			t.Fatal(err)
		}
		got(ch, released, "fresh")
		if n := e.s.Waiting(); n != 0 {
			t.Fatalf("%d claims still counted as waiting", n)
		}
	})

	t.Run("a waiting claim ends with its wait, its context, or the first due item", func(t *testing.T) {
		t.Parallel()
		e := newRetryEnv(t, newHarness, retry.Config{ClaimPoll: time.Minute})
		start := time.Now()
		ls, err := e.s.Claim(ctx(t), retry.ClaimParams{N: 1, Lease: lease, Wait: 50 * time.Millisecond})
		if err != nil || len(ls) != 0 || time.Since(start) < 50*time.Millisecond {
			t.Fatalf("an empty queue: %v, %v after %v; want nothing after the 50ms wait", ls, err, time.Since(start))
		}
		c, cancel := context.WithCancel(ctx(t))
		done := make(chan error, 1)
		go func() {
			_, err := e.s.Claim(c, retry.ClaimParams{N: 1, Lease: lease, Wait: time.Minute})
			done <- err
		}()
		waitfor.True(t, 30*time.Second, "the claim waits", func() bool { return e.s.Waiting() == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiting claim: %v, want context.Canceled", err)
		}
		// An item due by time wakes the claim at its due time; this
		// scheduler reads the real clock, since a waiting claim waits by it.
		// On a cluster engine that clock is the database's (storeclock),
		// which may differ from this process's by microseconds: judge by it.
		st := e.h.Open(t)
		now := storeclock.Or(nil, st)
		real, err := retry.New(st.(retry.Store), retry.Config{ClaimPoll: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		due := now().Add(300 * time.Millisecond)
		mustAdd(t, real, retry.NewItem{ID: "soon", NotBefore: due})
		ls, err = real.Claim(ctx(t), retry.ClaimParams{N: 1, Lease: lease, Wait: time.Minute})
		if at := now(); err != nil || len(ls) != 1 || ls[0].ID != "soon" || at.Before(due) || at.Sub(due) > 10*time.Second {
			t.Fatalf("claim of an item due at %v: %+v, %v at %v", due, ls, err, at)
		}
		if _, err := real.Claim(ctx(t), retry.ClaimParams{N: 1, Lease: lease, Wait: -time.Second}); !errors.Is(err, retry.ErrInvalid) {
			t.Fatalf("negative wait: %v, want ErrInvalid", err)
		}
		if _, err := real.Claim(ctx(t), retry.ClaimParams{N: 1, Lease: lease, Wait: retry.MaxClaimWait + 1}); !errors.Is(err, retry.ErrInvalid) {
			t.Fatalf("wait over the maximum: %v, want ErrInvalid", err)
		}
	})

	t.Run("claims are served by the partial indexes at 100 000 items", func(t *testing.T) {
		t.Parallel()
		testRetryPlan(t, newHarness)
	})

	t.Run("concurrent workers on two handles never share a lease", func(t *testing.T) {
		t.Parallel()
		testRetryConcurrent(t, newHarness)
	})
}

// grant is one lease handed out, with the fake-clock window it was live in.
type grant struct {
	id      string
	gen     int64
	start   time.Time
	until   time.Time
	settled time.Time // when the holder settled it; zero if never
}

// testRetryConcurrent runs 8 workers over 2 store handles, with a shared
// fake clock that they push forward so that leases run out and are taken
// over. It checks, from every grant recorded, that no two leases on one item
// were live at once and that each item succeeded at most once.
func testRetryConcurrent(t *testing.T, newHarness NewFunc) {
	const (
		workers = 8
		items   = 200
		lease   = time.Minute
		maxOps  = 150
	)
	e := newRetryEnv(t, newHarness, retry.Config{
		Jitter:  -1,
		Default: []time.Duration{30 * time.Second},
	})
	nodes := []*retry.Scheduler{e.s, e.open(t)}
	mustAdd(t, e.s, ids("c", items)...)

	var (
		mu        sync.Mutex
		grants    = map[string]*grant{} // by token
		succeeded = map[string]string{} // id -> token of the effective success
		failures  []string
	)
	deadline := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup
	var stop atomic.Bool
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := nodes[w%2]
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for op := 0; op < maxOps && !stop.Load() && time.Now().Before(deadline); op++ {
				ls, err := s.Claim(ctx(t), retry.ClaimParams{N: 1 + rng.IntN(4), Lease: lease, Worker: fmt.Sprint("w", w)})
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("claim: %v", err))
					mu.Unlock()
					stop.Store(true)
					return
				}
				mu.Lock()
				for _, l := range ls {
					if grants[l.Token] != nil {
						failures = append(failures, fmt.Sprintf("token %s granted twice", l.Token))
					}
					gen := l.Term
					// The claim's own clock reading, not one taken before
					// the call: other workers move the shared clock
					// meanwhile, and an earlier reading would date the grant
					// before the lease it took over had ended.
					grants[l.Token] = &grant{id: l.ID, gen: gen, start: l.Until.Add(-lease), until: l.Until}
				}
				mu.Unlock()
				for _, l := range ls {
					if rng.IntN(4) == 0 {
						e.clock.Advance(lease / 3) // let some leases run out under their holders
					}
					now := e.clock.Now()
					var err error
					var op retry.Op
					switch k := rng.IntN(10); {
					case k < 5:
						op, err = retry.OpSucceed, s.Succeed(ctx(t), l.Ref())
					case k < 8:
						op, err = retry.OpFail, s.Fail(ctx(t), l.Ref(), "timeout", "")
					case k < 9:
						op, err = retry.OpRelease, s.Release(ctx(t), l.Ref())
					default:
						var until time.Time
						op = retry.OpExtend
						until, err = s.Extend(ctx(t), l.Ref(), lease)
						if err == nil {
							mu.Lock()
							if g := grants[l.Token]; until.After(g.until) {
								g.until = until
							}
							mu.Unlock()
						}
						continue
					}
					mu.Lock()
					switch {
					case err == nil:
						g := grants[l.Token]
						if g.settled.IsZero() {
							g.settled = now
						}
						if op == retry.OpSucceed {
							if prev, ok := succeeded[l.ID]; ok && prev != l.Token {
								failures = append(failures, fmt.Sprintf("%s succeeded under two leases %s and %s", l.ID, prev, l.Token))
							}
							succeeded[l.ID] = l.Token
						}
					case errors.Is(err, retry.ErrLeaseLost):
					default:
						failures = append(failures, fmt.Sprintf("%v %s: %v", op, l.ID, err))
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	byItem := map[string][]*grant{}
	for _, g := range grants {
		byItem[g.id] = append(byItem[g.id], g)
	}
	overlaps := 0
	for id, gs := range byItem {
		slices.SortFunc(gs, func(a, b *grant) int { return cmp.Compare(a.gen, b.gen) })
		for i := 1; i < len(gs); i++ {
			prev, cur := gs[i-1], gs[i]
			end := prev.until
			if !prev.settled.IsZero() && prev.settled.Before(end) {
				end = prev.settled
			}
			if cur.start.Before(end) {
				overlaps++
				t.Errorf("%s: lease %d granted at %v while lease %d was live until %v", id, cur.gen, cur.start, prev.gen, end)
			}
		}
	}
	for id, tok := range succeeded {
		it := mustGet(t, e.s, id)
		if it.State != retry.Done {
			t.Errorf("%s succeeded (lease %s) but is %v", id, tok, it.State)
		}
	}
	st, err := e.s.Stats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != items || st.ByState["done"] != len(succeeded) {
		t.Errorf("stats %+v; want %d items, %d done (one per recorded success)", st, items, len(succeeded))
	}
	recount := map[string]int{"pending": 0, "scheduled": 0, "leased": 0, "done": 0}
	classes := map[string]int{}
	for _, it := range ids("c", items) {
		got := mustGet(t, e.s, it.ID)
		recount[got.State.String()]++
		if got.State == retry.Scheduled && got.LastClass != "" {
			classes[got.LastClass]++
		}
	}
	if fmt.Sprint(recount) != fmt.Sprint(st.ByState) || fmt.Sprint(classes) != fmt.Sprint(st.ByClass) {
		t.Errorf("stats counted %v %v; the items themselves say %v %v", st.ByState, st.ByClass, recount, classes)
	}
	if len(grants) < 100 {
		t.Errorf("only %d grants: the test did not exercise concurrency", len(grants))
	}
	t.Logf("%s: %d grants, %d successes, %d overlaps", e.h.Engine, len(grants), len(succeeded), overlaps)
}

// RetryBench sets up a retry scheduler over st with n items waiting far in
// the future (so that indexes have the size of a real backlog) and returns
// it with a function that adds k more items due at once. Engines' benchmarks
// use it so that both measure the same thing.
func RetryBench(b *testing.B, st retry.Store, n int) (s *retry.Scheduler, addDue func(k int)) {
	b.Helper()
	s, err := retry.New(st, retry.Config{})
	if err != nil {
		b.Fatal(err)
	}
	c := ctx(b)
	far := time.Now().Add(30 * 24 * time.Hour)
	batch := make([]retry.NewItem, 0, retry.MaxAdd)
	flush := func() {
		if _, err := s.Add(c, batch...); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range n {
		batch = append(batch, retry.NewItem{ID: fmt.Sprintf("far%037d", i), NotBefore: far.Add(time.Duration(i) * time.Second)})
		if len(batch) == cap(batch) {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	next := 0
	addDue = func(k int) {
		for range k {
			batch = append(batch, retry.NewItem{ID: fmt.Sprintf("due%037d", next)})
			next++
			if len(batch) == cap(batch) {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
	}
	return s, addDue
}

// BenchRetryCycle measures claim→settle cycles in claims of batch items;
// b.N counts items.
func BenchRetryCycle(b *testing.B, s *retry.Scheduler, addDue func(int), batch int, op retry.Op) {
	b.Helper()
	c := ctx(b)
	addDue(b.N + batch)
	b.ResetTimer()
	for done := 0; done < b.N; {
		ls, err := s.Claim(c, retry.ClaimParams{N: min(batch, b.N-done), Lease: time.Minute})
		if err != nil || len(ls) == 0 {
			b.Fatalf("claim: %d leases, %v", len(ls), err)
		}
		out := make([]retry.Outcome, len(ls))
		for i, l := range ls {
			out[i] = retry.Outcome{Lease: l.Ref(), Op: op, Class: "timeout"}
		}
		errs, err := s.Settle(c, out)
		if err != nil || errors.Join(errs...) != nil {
			b.Fatalf("settle: %v %v", errs, err)
		}
		done += len(ls)
	}
}

// retryPlanner is what a store offers to show how it serves a claim.
type retryPlanner interface {
	RetryClaimPlan(ctx context.Context, n int) (string, error)
}

// testRetryPlan fills a store with 100 000 items waiting for the future
// and a thousand due ones, then reads the plan of a claim: it must use the
// partial indexes over due (retry_items_claim) and waiting
// (retry_items_wake) items and never scan the table.
func testRetryPlan(t *testing.T, newHarness NewFunc) {
	const waiting, due = 100_000, 1000
	e := newRetryEnv(t, newHarness, retry.Config{})
	far := e.clock.Now().Add(30 * 24 * time.Hour)
	batch := make([]retry.NewItem, 0, retry.MaxAdd)
	for i := range waiting {
		batch = append(batch, retry.NewItem{ID: fmt.Sprintf("far%07d", i), NotBefore: far.Add(time.Duration(i) * time.Second)})
		if len(batch) == cap(batch) {
			mustAdd(t, e.s, batch...)
			batch = batch[:0]
		}
	}
	mustAdd(t, e.s, ids("due", due)...)
	// A first claim promotes and leases some, as a running queue would.
	mustClaim(t, e.s, 100, time.Minute)
	p, ok := e.h.Open(t).(retryPlanner)
	if !ok {
		t.Fatalf("%s store does not show its claim plan", e.h.Engine)
	}
	plan, err := p.RetryClaimPlan(ctx(t), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, index := range []string{"retry_items_claim", "retry_items_wake"} {
		if !strings.Contains(plan, index) {
			t.Errorf("the claim plan does not use %s:\n%s", index, plan)
		}
	}
	for _, scan := range []string{"SCAN retry_items\n", "Seq Scan on retry_items"} {
		if strings.Contains(plan, scan) {
			t.Errorf("the claim plan scans the table:\n%s", plan)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%s claim plan:\n%s", e.h.Engine, plan)
}
