package storetest

import (
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// testRetryWakes: a write wakes waiting claims only when it leaves work
// that could be claimed before every waiting claim has ended. A sighting
// that pulls an item to within the default ReactivateWithin (10 minutes,
// beyond MaxClaimWait) or a failure scheduled for later wakes nobody;
// one that makes an item due soon does, and so does an add.
func testRetryWakes(t *testing.T, newHarness NewFunc) {
	t.Parallel()
	h := newHarness(t)
	st, ok := h.Open(t).(retry.Store)
	if !ok {
		t.Fatalf("%s store does not implement retry.Store", h.Engine)
	}
	clock := newRetryClock()
	open := func(cfg retry.Config) *retry.Scheduler {
		cfg.Now, cfg.Jitter = clock.Now, -1
		s, err := retry.New(st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	slow := open(retry.Config{}) // ReactivateWithin: the default, 10 minutes
	soon := open(retry.Config{ReactivateWithin: time.Second})
	later := clock.Now().Add(30 * 24 * time.Hour)
	mustAdd(t, slow, retry.NewItem{ID: "a", NotBefore: later}, retry.NewItem{ID: "b", NotBefore: later},
		retry.NewItem{ID: "c", NotBefore: later}, retry.NewItem{ID: "fails"})
	l := mustClaim(t, slow, 1, time.Hour)[0]

	steps := []struct {
		what string
		do   func() error
		wake bool
	}{
		{"a sighting due in 10 minutes", func() error { _, err := slow.Observe(ctx(t), "a", retry.ObserveParams{}); return err }, false},
		{"a sighting from a source due in 10 minutes", func() error {
			_, err := slow.Observe(ctx(t), "b", retry.ObserveParams{Source: "peer-1"})
			return err
		}, false},
		{"a failure retried in 30 minutes", func() error { return slow.Fail(ctx(t), l.Ref(), "no_peers", "") }, false},
		{"a sighting due in a second", func() error { _, err := soon.Observe(ctx(t), "c", retry.ObserveParams{}); return err }, true},
		{"a sighting that adds an item", func() error {
			_, err := slow.Observe(ctx(t), "new", retry.ObserveParams{AddIfMissing: true})
			return err
		}, true},
	}
	for _, step := range steps {
		// The store wakes its own handle's claims before the write
		// returns, so the channel's state right after it is the answer.
		wake, err := st.RetryWake(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		select {
		case <-wake:
			if !step.wake {
				t.Errorf("%s woke waiting claims: nothing it made can be claimed before they end", step.what)
			}
		default:
			if step.wake {
				t.Errorf("%s did not wake waiting claims", step.what)
			}
		}
	}
}
