package retry

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

func TestInputError(t *testing.T) {
	t.Parallel()
	err := error(&InputError{Field: "items[3].id", Reason: "is empty"})
	if got, want := err.Error(), "retry: items[3].id: is empty"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&InputError{Reason: "too many"}).Error(), "retry: too many"; got != want {
		t.Errorf("Error() without a field = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
		t.Error("an InputError must match ErrInvalid and nothing else")
	}
}

// TestInputFields checks that every rejected input names its field the
// way the daemon's JSON spells it, and that nothing reached the store.
func TestInputFields(t *testing.T) {
	t.Parallel()
	s, err := New(nopStore{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ref := LeaseRef{ID: "x", Token: newTokens(1)[0]}
	long := strings.Repeat("x", MaxIDBytes+1)
	cases := []struct {
		field string
		call  func() error
	}{
		{"items[1].id", func() error { _, err := s.Add(t.Context(), NewItem{ID: "ok"}, NewItem{ID: ""}); return err }},
		{"items[0].id", func() error { _, err := s.Add(t.Context(), NewItem{ID: long}); return err }},
		{"items[0].id", func() error { _, err := s.Add(t.Context(), NewItem{ID: "bell\a"}); return err }},
		{"items[0].priority", func() error { _, err := s.Add(t.Context(), NewItem{ID: "a", Priority: MaxPriority + 1}); return err }},
		{"items[0].payload", func() error {
			_, err := s.Add(t.Context(), NewItem{ID: "a", Payload: make([]byte, MaxPayloadBytes+1)})
			return err
		}},
		{"items[0].not_before", func() error {
			_, err := s.Add(t.Context(), NewItem{ID: "a", NotBefore: time.Now().Add(200 * 365 * 24 * time.Hour)})
			return err
		}},
		{"items", func() error { _, err := s.Add(t.Context(), make([]NewItem, MaxAdd+1)...); return err }},
		{"id", func() error { _, err := s.Get(t.Context(), "nul\x00"); return err }},
		{"id", func() error { return s.Forget(t.Context(), "") }},
		{"n", func() error { _, err := s.Claim(t.Context(), ClaimParams{N: 0, Lease: time.Minute}); return err }},
		{"lease_seconds", func() error { _, err := s.Claim(t.Context(), ClaimParams{N: 1}); return err }},
		{"worker", func() error {
			_, err := s.Claim(t.Context(), ClaimParams{N: 1, Lease: time.Minute, Worker: "w\x1b[31m"})
			return err
		}},
		{"worker", func() error {
			_, err := s.Claim(t.Context(), ClaimParams{N: 1, Lease: time.Minute, Worker: strings.Repeat("w", 129)})
			return err
		}},
		{"lease", func() error { return s.Succeed(t.Context(), LeaseRef{ID: "x", Token: "01"}) }},
		{"class", func() error { return s.Fail(t.Context(), ref, "", "") }},
		{"class", func() error { return s.Fail(t.Context(), ref, "time\nout", "") }},
		{"note", func() error { return s.Fail(t.Context(), ref, "timeout", "bad \xff") }},
		{"lease_seconds", func() error { _, err := s.Extend(t.Context(), ref, 0); return err }},
		{"outcomes[1].op", func() error {
			_, err := s.Settle(t.Context(), []Outcome{{Lease: ref, Op: OpSucceed}, {Lease: ref, Op: 99}})
			return err
		}},
		{"outcomes[0].lease", func() error { _, err := s.Settle(t.Context(), []Outcome{{Lease: LeaseRef{ID: "x"}}}); return err }},
		{"ids[1]", func() error { _, err := s.ObserveMany(t.Context(), []string{"a", "\xff"}, ObserveParams{}); return err }},
		{"boost", func() error { _, err := s.Observe(t.Context(), "a", ObserveParams{Boost: -1}); return err }},
		{"priority", func() error {
			_, err := s.Observe(t.Context(), "a", ObserveParams{Priority: -MaxPriority - 1})
			return err
		}},
		{"payload", func() error {
			_, err := s.Observe(t.Context(), "a", ObserveParams{Payload: make([]byte, MaxPayloadBytes+1)})
			return err
		}},
	}
	for _, tc := range cases {
		// nopStore panics on any call: reaching the store is a failure too.
		err := tc.call()
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v; want an *InputError for %s", tc.field, err, tc.field)
		}
	}
}

func TestStatsFromZeroFillsAndSums(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := statsFrom(retrydriver.StatsResult{
		Counts: []retrydriver.Count{
			{State: retrydriver.Scheduled, Class: "timeout", N: 2},
			{State: retrydriver.Scheduled, Class: "timeout", N: 3}, // another shard
			{State: retrydriver.Scheduled, Class: "", N: 1},        // released after a failure-free attempt
			{State: retrydriver.Done, Class: "timeout", N: 4},      // done items wait for nothing
			{State: retrydriver.Leased, N: 0},
		},
		DueNow:    3,
		OldestDue: now.Add(-time.Minute),
	}, now)
	want := map[string]int{"pending": 0, "scheduled": 6, "leased": 0, "done": 4}
	if st.Total != 10 || len(st.ByState) != 4 || st.ByState["scheduled"] != want["scheduled"] || st.ByState["done"] != 4 ||
		st.ByState["pending"] != 0 || len(st.ByClass) != 1 || st.ByClass["timeout"] != 5 || st.DueNow != 3 || st.OldestDueLag != time.Minute {
		t.Fatalf("statsFrom: %+v", st)
	}
	if empty := statsFrom(retrydriver.StatsResult{}, now); empty.Total != 0 || len(empty.ByState) != 4 || empty.OldestDueLag != 0 || empty.ByClass == nil {
		t.Fatalf("statsFrom of nothing: %+v", empty)
	}
	if future := statsFrom(retrydriver.StatsResult{DueNow: 1, OldestDue: now.Add(time.Second)}, now); future.OldestDueLag != 0 {
		t.Fatalf("a due time after now gave a lag of %v", future.OldestDueLag)
	}
}

func TestItemFromMapsTheTimeColumn(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		state             State
		nextAt, leaseTill bool
		worker            bool
	}{
		{Pending, true, false, false},
		{Scheduled, true, false, false},
		{Leased, false, true, true},
		{Done, false, false, false},
	} {
		it, err := itemFrom(&retrydriver.Record{ID: "x", State: retrydriver.State(tc.state), NextAt: at, Worker: "w"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !it.NextAt.IsZero() != tc.nextAt || !it.LeaseUntil.IsZero() != tc.leaseTill || (it.Worker != "") != tc.worker {
			t.Errorf("%v: NextAt %v, LeaseUntil %v, Worker %q", tc.state, it.NextAt, it.LeaseUntil, it.Worker)
		}
	}
	if _, err := itemFrom(&retrydriver.Record{ID: "x", History: []byte("{")}, nil); err == nil {
		t.Error("a corrupt stored history came back without an error")
	}
}
