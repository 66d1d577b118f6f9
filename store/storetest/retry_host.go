package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/retry/retrydriver"
)

// failOne claims the one due item id and fails it with class (and host,
// if given). Nothing else may be due.
func failOne(t *testing.T, s *retry.Scheduler, id, class, host string) {
	t.Helper()
	ls := mustClaim(t, s, 1, time.Minute)
	if len(ls) != 1 || ls[0].ID != id {
		t.Fatalf("claim for %s got %v", id, leaseIDs(ls))
	}
	if err := s.SettleOne(ctx(t), retry.Outcome{Lease: ls[0].Ref(), Op: retry.OpFail, Class: class, Host: host}); err != nil {
		t.Fatalf("fail %s: %v", id, err)
	}
}

// testRetryHost is the wake of a host's parked items as a step table under
// the fake clock: only items of that host, only those waiting out a
// host-level class, due within the jitter, their ladder position kept;
// a second wake for the same recovery does nothing; the counters move;
// a claim waiting on another handle receives the items.
func testRetryHost(t *testing.T, newHarness NewFunc) {
	t.Parallel()
	const spread = 10 * time.Second
	e := newRetryEnv(t, newHarness, retry.Config{
		Jitter:     -1,
		WakeJitter: spread,
		Classes:    map[string]retry.ClassConfig{"hoster_down": {Ladder: retry.Ladder{6 * time.Hour}, Host: true}},
	})
	s := e.s

	// Each item is added, claimed and failed alone, so that the claim
	// order is known.
	type row struct {
		id, addHost, class, failHost string
		wake                         bool
		why                          string
	}
	rows := []row{
		{"a-timeout", "Example.COM.", "timeout", "", true, "host-level class of the host, its name normalised"},
		{"b-no-peers", "example.com", "no_peers", "", false, "a class about the item, not its host"},
		{"c-other-host", "other.example", "timeout", "", false, "another host"},
		{"d-no-host", "", "timeout", "", false, "no host at all"},
		{"e-host-on-fail", "", "dns_temporary", "EXAMPLE.com", true, "host named by the failure"},
		{"f-own-class", "example.com", "hoster_down", "", true, "a configured class marked host-level"},
		{"g-lease-expired", "example.com", retry.ClassLeaseExpired, "", false, "lease_expired is not host-level"},
	}
	// h-twice fails twice in a row before the others fail once: it waits
	// the ladder's second step, and must still be at the second step
	// after the wake.
	mustAdd(t, s, retry.NewItem{ID: "h-twice", Host: "example.com"})
	failOne(t, s, "h-twice", "refused", "")
	e.clock.Advance(31 * time.Minute)
	failOne(t, s, "h-twice", "refused", "")
	for _, r := range rows {
		mustAdd(t, s, retry.NewItem{ID: r.id, Host: r.addHost})
		failOne(t, s, r.id, r.class, r.failHost)
	}
	// A pending item of the host that was never tried, and a leased one:
	// neither waits out a failure.
	mustAdd(t, s, retry.NewItem{ID: "i-pending", Host: "example.com", NotBefore: e.clock.Now().Add(48 * time.Hour)})
	mustAdd(t, s, retry.NewItem{ID: "j-leased", Host: "example.com"})
	held := mustClaim(t, s, 1, time.Hour)
	if len(held) != 1 || held[0].ID != "j-leased" {
		t.Fatalf("claimed %v; want j-leased", leaseIDs(held))
	}

	before := map[string]retry.Item{}
	for _, id := range []string{"a-timeout", "b-no-peers", "c-other-host", "d-no-host", "e-host-on-fail", "f-own-class",
		"g-lease-expired", "h-twice", "i-pending", "j-leased"} {
		before[id] = mustGet(t, s, id)
	}
	if got := before["a-timeout"].Host; got != "example.com" {
		t.Fatalf("a-timeout's host is %q; want it normalised to example.com", got)
	}
	if got := before["e-host-on-fail"].Host; got != "example.com" {
		t.Fatalf("e-host-on-fail's host is %q; want example.com from its failure", got)
	}
	if f := before["h-twice"].Failures; f != 2 {
		t.Fatalf("h-twice has %d failures in a row; want 2", f)
	}

	// A claim waiting on another handle (another node on PostgreSQL)
	// hears of the wake through the same path as of any other write.
	other := e.open(t)
	type claimed struct {
		ls  []retry.Lease
		err error
	}
	waiting := make(chan claimed, 1)
	wctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	go func() {
		ls, err := other.Claim(wctx, retry.ClaimParams{N: 10, Lease: time.Minute, Worker: "waiter", Wait: retry.MaxClaimWait})
		waiting <- claimed{ls, err}
	}()
	waitfor.True(t, 10*time.Second, "the claim waits", func() bool { return other.Waiting() == 1 })

	now := e.clock.Now()
	res, err := s.WakeHost(ctx(t), "EXAMPLE.com")
	if err != nil {
		t.Fatal(err)
	}
	if res.Host != "example.com" || res.Woken != 4 {
		t.Fatalf("WakeHost = %+v; want host example.com, 4 woken", res)
	}
	for id, b := range before {
		a := mustGet(t, s, id)
		woken := id == "h-twice" || slices.ContainsFunc(rows, func(r row) bool { return r.id == id && r.wake })
		if a.Failures != b.Failures || a.LastClass != b.LastClass || len(a.History) != len(b.History) || a.State != b.State {
			t.Errorf("%s: the wake changed more than its time: %+v, was %+v", id, a, b)
		}
		switch {
		case woken && (a.NextAt.Before(now) || a.NextAt.After(now.Add(spread))):
			t.Errorf("%s: next at %v; want within [%v, %v]", id, a.NextAt, now, now.Add(spread))
		case !woken && !a.NextAt.Equal(b.NextAt):
			why := "pending or leased"
			for _, r := range rows {
				if r.id == id {
					why = r.why
				}
			}
			t.Errorf("%s (%s) was moved from %v to %v", id, why, b.NextAt, a.NextAt)
		}
	}
	again, err := s.WakeHost(ctx(t), "example.com")
	if err != nil || again.Woken != 0 {
		t.Fatalf("a second wake for the same recovery = %+v, %v; want nothing woken", again, err)
	}
	st, err := s.Stats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.HostWakes != 1 || st.HostWoken != 4 || !st.HostWokenAt.Equal(now) {
		t.Fatalf("stats: wakes %d woken %d at %v; want 1, 4 at %v", st.HostWakes, st.HostWoken, st.HostWokenAt, now)
	}

	// The woken items come due within the jitter: the waiting claim
	// receives them once the clock has passed it.
	e.clock.Advance(spread)
	got := <-waiting
	if got.err != nil {
		t.Fatal(got.err)
	}
	var gotIDs []string
	for _, l := range got.ls {
		gotIDs = append(gotIDs, l.ID)
	}
	slices.Sort(gotIDs)
	if want := []string{"a-timeout", "e-host-on-fail", "f-own-class", "h-twice"}; !slices.Equal(gotIDs, want) {
		t.Fatalf("the waiting claim received %v; want %v", gotIDs, want)
	}
	// The ladder position was kept: h-twice's third failure in a row
	// waits the third step (8 h), not the first.
	for _, l := range got.ls {
		if l.ID != "h-twice" {
			continue
		}
		if l.Failures != 2 {
			t.Fatalf("h-twice's lease says %d failures; want 2", l.Failures)
		}
		at := e.clock.Now()
		if err := other.Fail(ctx(t), l.Ref(), "refused", ""); err != nil {
			t.Fatal(err)
		}
		if next := mustGet(t, s, "h-twice").NextAt; !next.Equal(at.Add(retry.DefaultLadder[2])) {
			t.Fatalf("h-twice's next failure waits until %v; want the third step, %v", next, at.Add(retry.DefaultLadder[2]))
		}
	}

	t.Run("spread", func(t *testing.T) {
		const n = 50
		items := make([]retry.NewItem, n)
		for i := range items {
			items[i] = retry.NewItem{ID: fmt.Sprintf("spread%02d", i), Host: "spread.example"}
		}
		mustAdd(t, s, items...)
		for len(mustClaimFail(t, s, "timeout")) > 0 {
		}
		now := e.clock.Now()
		if res, err := s.WakeHost(ctx(t), "spread.example"); err != nil || res.Woken != n {
			t.Fatalf("WakeHost = %+v, %v; want %d woken", res, err, n)
		}
		seen := map[time.Time]bool{}
		for _, it := range items {
			at := mustGet(t, s, it.ID).NextAt
			if at.Before(now) || at.After(now.Add(spread)) {
				t.Fatalf("%s: next at %v; want within [%v, %v]", it.ID, at, now, now.Add(spread))
			}
			seen[at] = true
		}
		if len(seen) < n/2 {
			t.Fatalf("%d items woken at only %d distinct times; want them spread", n, len(seen))
		}
	})

	t.Run("no spread", func(t *testing.T) {
		cfg := e.cfg
		cfg.WakeJitter = -1
		st, ok := e.h.Open(t).(retry.Store)
		if !ok {
			t.Fatal("not a retry store")
		}
		exact, err := retry.New(st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustAdd(t, exact, retry.NewItem{ID: "exact1", Host: "exact.example"}, retry.NewItem{ID: "exact2", Host: "exact.example"})
		for len(mustClaimFail(t, exact, "refused")) > 0 {
		}
		now := e.clock.Now()
		if res, err := exact.WakeHost(ctx(t), "exact.example"); err != nil || res.Woken != 2 {
			t.Fatalf("WakeHost = %+v, %v; want 2 woken", res, err)
		}
		for _, id := range []string{"exact1", "exact2"} {
			if at := mustGet(t, exact, id).NextAt; !at.Equal(now) {
				t.Fatalf("%s: next at %v; want now, %v, with the spread off", id, at, now)
			}
		}
	})

	t.Run("bad hosts change nothing", func(t *testing.T) {
		for _, bad := range []string{"user:pw@example.com", "http://example.com/", "example.com:8080", "exa mple.com", "example.com/path", "a\x00b", "xn--%41"} {
			_, err := s.Add(ctx(t), retry.NewItem{ID: "bad-host", Host: bad})
			var ie *retry.InputError
			if !errors.As(err, &ie) || ie.Field != "items[0].host" {
				t.Fatalf("Add with host %q: %v; want an InputError for items[0].host", bad, err)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Fatalf("the error repeats the userinfo: %v", err)
			}
			if _, err := s.WakeHost(ctx(t), bad); !errors.Is(err, retry.ErrInvalid) {
				t.Fatalf("WakeHost(%q): %v; want ErrInvalid", bad, err)
			}
		}
		if _, err := s.Get(ctx(t), "bad-host"); !errors.Is(err, retry.ErrNotFound) {
			t.Fatalf("an add refused for its host stored the item: %v", err)
		}
		for _, good := range []string{"[2001:DB8::1]", "192.0.2.7", "xn--bcher-kva.example", "under_score.example"} {
			if _, err := retry.NormalizeHost(good); err != nil {
				t.Fatalf("NormalizeHost(%q): %v", good, err)
			}
		}
	})
}

// mustClaimFail claims the due items and fails each with class; it
// returns the ids it failed.
func mustClaimFail(t *testing.T, s *retry.Scheduler, class string) []string {
	t.Helper()
	ls := mustClaim(t, s, 100, time.Minute)
	for _, l := range ls {
		if err := s.Fail(ctx(t), l.Ref(), class, ""); err != nil {
			t.Fatal(err)
		}
	}
	return leaseIDs(ls)
}

// retryHostPlanner is a store that shows its plan for the wake of a host.
type retryHostPlanner interface {
	RetryWakeHostPlan(ctx context.Context, q retrydriver.WakeHostParams) (string, error)
}

// testRetryHostPlan fills a store with items waiting for the future,
// most without a host, and reads the plan of a wake: it must find the
// host's items through retry_items_host and never scan the table.
func testRetryHostPlan(t *testing.T, newHarness NewFunc) {
	t.Parallel()
	const plain, parked = 20_000, 500
	e := newRetryEnv(t, newHarness, retry.Config{})
	far := e.clock.Now().Add(30 * 24 * time.Hour)
	batch := make([]retry.NewItem, 0, retry.MaxAdd)
	flush := func() {
		mustAdd(t, e.s, batch...)
		batch = batch[:0]
	}
	for i := range plain {
		batch = append(batch, retry.NewItem{ID: fmt.Sprintf("far%07d", i), NotBefore: far})
		if len(batch) == cap(batch) {
			flush()
		}
	}
	for i := range parked {
		batch = append(batch, retry.NewItem{ID: fmt.Sprintf("host%05d", i), Host: fmt.Sprintf("h%d.example", i%5)})
	}
	flush()
	for len(mustClaimFail(t, e.s, "timeout")) > 0 {
	}
	p, ok := e.h.Open(t).(retryHostPlanner)
	if !ok {
		t.Fatalf("%s store does not show its wake plan", e.h.Engine)
	}
	plan, err := p.RetryWakeHostPlan(ctx(t), retrydriver.WakeHostParams{
		Now: e.clock.Now(), Host: "h1.example", Classes: []string{"refused", "timeout"}, Spread: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "retry_items_host") {
		t.Errorf("the wake plan does not use retry_items_host:\n%s", plan)
	}
	for _, scan := range []string{"SCAN retry_items\n", "Seq Scan on retry_items"} {
		if strings.Contains(plan, scan) {
			t.Errorf("the wake plan scans the table:\n%s", plan)
		}
	}
	if !t.Failed() {
		t.Logf("%s wake plan:\n%s", e.h.Engine, plan)
	}
}
