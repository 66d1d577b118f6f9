package retry

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// TestApplyOutcome runs the lease state machine as a step table over one
// record: each row is an operation with a token and what must follow.
func TestApplyOutcome(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(nopStore{}, Config{Jitter: -1, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	tok := func(c string) string { return strings.Repeat(c, tokenLen) }
	r := &retrydriver.Record{ID: "x", State: retrydriver.Leased, NextAt: t0.Add(time.Minute), Attempts: 1, LeaseGen: 7, LeaseKey: tok("7"), Worker: "w"}
	steps := []struct {
		name    string
		o       Outcome
		gen     string
		err     error
		changed bool
		state   State
	}{
		{"older token", Outcome{Op: OpSucceed}, tok("6"), ErrLeaseLost, false, Leased},
		{"newer token", Outcome{Op: OpSucceed}, tok("8"), ErrLeaseLost, false, Leased},
		{"one digit off", Outcome{Op: OpSucceed}, tok("7")[1:] + "8", ErrLeaseLost, false, Leased},
		{"extend", Outcome{Op: OpExtend, Extend: time.Hour}, tok("7"), nil, true, Leased},
		{"extend again", Outcome{Op: OpExtend, Extend: time.Hour}, tok("7"), nil, true, Leased},
		{"fail", Outcome{Op: OpFail, Class: "timeout", Note: "slow"}, tok("7"), nil, true, Scheduled},
		{"fail repeated", Outcome{Op: OpFail, Class: "timeout"}, tok("7"), nil, false, Scheduled},
		{"succeed after fail", Outcome{Op: OpSucceed}, tok("7"), ErrLeaseLost, false, Scheduled},
		{"extend after fail", Outcome{Op: OpExtend, Extend: time.Hour}, tok("7"), ErrLeaseLost, false, Scheduled},
	}
	for _, st := range steps {
		before := *r
		changed, err := s.applyOutcome(r, st.o, st.gen, t0)
		if !errors.Is(err, st.err) || (st.err == nil && err != nil) || changed != st.changed || r.State != retrydriver.State(st.state) {
			t.Fatalf("%s: changed=%v err=%v state=%v; want %v %v %v", st.name, changed, err, r.State, st.changed, st.err, st.state)
		}
		if !changed && (r.UpdatedAt != before.UpdatedAt || r.NextAt != before.NextAt || len(r.History) != len(before.History)) {
			t.Fatalf("%s: an unchanged outcome modified the record", st.name)
		}
	}
	if h, _ := decodeHistory(r.History); r.Failures != 1 || r.Worker != "" || !r.NextAt.Equal(t0.Add(30*time.Minute)) || len(h) != 1 || r.SettledGen != 7 {
		t.Fatalf("after fail: %+v", r)
	}
	// A record without a key (leased before tokens had one) matches no token.
	keyless := &retrydriver.Record{ID: "y", State: retrydriver.Leased, LeaseGen: 3}
	if _, err := s.applyOutcome(keyless, Outcome{Op: OpSucceed}, "", t0); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a keyless record accepted the empty token: %v", err)
	}
}

func TestApplyExpiryRechecks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, _ := New(nopStore{}, Config{Jitter: -1})
	for _, r := range []retrydriver.Record{
		{State: retrydriver.Scheduled, NextAt: t0, Expiries: 2},               // someone else handled it
		{State: retrydriver.Leased, NextAt: t0.Add(time.Second), Expiries: 2}, // extended meanwhile
		{State: retrydriver.Leased, NextAt: t0, Expiries: 1},                  // not the third expiry
	} {
		if changed, err := s.applyExpiry(&r, t0); changed || err != nil {
			t.Errorf("applyExpiry(%+v) = %v, %v; want no change", r, changed, err)
		}
	}
	r := retrydriver.Record{State: retrydriver.Leased, NextAt: t0, Expiries: 2, LeaseGen: 4}
	if changed, _ := s.applyExpiry(&r, t0); !changed || r.State != retrydriver.Scheduled || r.LastClass != ClassLeaseExpired ||
		r.SettledGen != 4 || r.SettledOp != retrydriver.OpExpire || !r.NextAt.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("third expiry: %+v", r)
	}
}
