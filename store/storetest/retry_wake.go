package storetest

import (
	"errors"
	"fmt"
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

// testRetryWakeMany wakes more items of one host than one chunk of the
// SQLite store holds, in two classes, beside items of the host waiting
// out another class: every parked item is woken once, within the spread
// and across it, the event is counted once with all its items, and a
// second wake finds nothing.
func testRetryWakeMany(t *testing.T, newHarness NewFunc) {
	t.Parallel()
	const spread = time.Minute
	const timeouts, refusals, other = 600, 150, 40
	e := newRetryEnv(t, newHarness, retry.Config{Jitter: -1, WakeJitter: spread})
	s := e.s
	batch := make([]retry.NewItem, 0, timeouts+refusals+other)
	for i := range cap(batch) {
		batch = append(batch, retry.NewItem{ID: fmt.Sprintf("many%05d", i), Host: "many.example"})
	}
	for len(batch) > 0 {
		n := min(len(batch), retry.MaxAdd)
		mustAdd(t, s, batch[:n]...)
		batch = batch[n:]
	}
	classOf := func(id string) string {
		var i int
		fmt.Sscanf(id, "many%05d", &i)
		switch {
		case i < timeouts:
			return "timeout"
		case i < timeouts+refusals:
			return "refused"
		}
		return "no_peers"
	}
	for {
		ls := mustClaim(t, s, retry.MaxClaim, time.Minute)
		if len(ls) == 0 {
			break
		}
		out := make([]retry.Outcome, len(ls))
		for i, l := range ls {
			out[i] = retry.Outcome{Lease: l.Ref(), Op: retry.OpFail, Class: classOf(l.ID)}
		}
		errs, err := s.Settle(ctx(t), out)
		if err != nil || errors.Join(errs...) != nil {
			t.Fatalf("settle: %v %v", err, errors.Join(errs...))
		}
	}
	before, err := s.Stats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	res, err := s.WakeHost(ctx(t), "many.example")
	if err != nil {
		t.Fatal(err)
	}
	if res.Woken != timeouts+refusals {
		t.Fatalf("the wake moved %d items; want %d", res.Woken, timeouts+refusals)
	}
	after, err := s.Stats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if d := after.HostWakes - before.HostWakes; d != 1 {
		t.Errorf("the wake counted %d events; want 1", d)
	}
	if d := after.HostWoken - before.HostWoken; d != timeouts+refusals {
		t.Errorf("the wake counted %d items; want %d", d, timeouts+refusals)
	}
	if !after.HostWokenAt.Equal(now) {
		t.Errorf("HostWokenAt = %v; want %v", after.HostWokenAt, now)
	}
	due := map[string]time.Time{}
	for page := (retry.ListPage{Next: ""}); ; {
		var err error
		page, err = s.List(ctx(t), retry.ListParams{After: page.Next, Limit: retry.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			due[it.ID] = it.NextAt
		}
		if page.Next == "" {
			break
		}
	}
	var first, last time.Time
	for id, at := range due {
		if classOf(id) == "no_peers" {
			if !at.After(now.Add(spread)) {
				t.Errorf("%s, waiting out no_peers, is due at %v: the wake moved it", id, at)
			}
			continue
		}
		if at.Before(now) || at.After(now.Add(spread)) {
			t.Errorf("%s is due at %v; want within [%v, %v]", id, at, now, now.Add(spread))
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if len(due) != timeouts+refusals+other {
		t.Fatalf("listed %d items; want %d", len(due), timeouts+refusals+other)
	}
	if last.Sub(first) < spread/2 {
		t.Errorf("the woken items are due from %v to %v: not spread over the %v", first, last, spread)
	}
	if it := mustGet(t, s, "many00000"); it.Failures != 1 {
		t.Errorf("a woken item has %d failures in a row; want 1 (its ladder position kept)", it.Failures)
	}
	again, err := s.WakeHost(ctx(t), "many.example")
	if err != nil || again.Woken != 0 {
		t.Errorf("a second wake for the same recovery = %+v, %v; want nothing moved", again, err)
	}
}
