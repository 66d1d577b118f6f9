package reliability

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The checks on the workers' logs, fed histories with one known fault
// each: a check that never fires proves nothing about the daemon.

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// grant is a lease claimed at ms (request and answer 2 ms apart) for
// length ms.
func grant(item, token string, attempt, ms, length int) *leaseRec {
	return &leaseRec{item: item, token: token, attempt: attempt, length: time.Duration(length) * time.Millisecond,
		claimSent: at(ms - 1), claimAcked: at(ms + 1), firstUntil: at(ms + length), until: at(ms + length)}
}

func (l *leaseRec) settled(op string, ms int) *leaseRec {
	l.op, l.opSent, l.opAcked, l.opAckedAt = op, at(ms), true, at(ms+1)
	return l
}

func (l *leaseRec) tried(op string, ms int) *leaseRec {
	l.op, l.opSent = op, at(ms)
	return l
}

func (l *leaseRec) lostAt(op string, ms int) *leaseRec {
	l.lostOp, l.lostAckedAt = op, at(ms)
	return l
}

func (l *leaseRec) extended(ms, length int) *leaseRec {
	l.until = at(ms + length)
	l.extends++
	return l
}

func TestCheck(t *testing.T) {
	done := finalItem{found: true, State: "done", Attempts: 1}
	for _, tc := range []struct {
		name   string
		h      history
		final  map[string]finalItem
		end    int    // ms at which the workers stopped
		want   string // the violation kinds expected, comma-separated; "" for none
		detail string
	}{
		{name: "clean", want: "",
			h: history{adds: []addRec{{ids: []string{"a", "b"}}}, leases: []*leaseRec{
				grant("a", "1", 1, 0, 1000).settled("succeed", 500),
				grant("b", "2", 1, 0, 1000),                          // held, ran out
				grant("b", "3", 2, 1000, 1000).settled("fail", 1200), // claimed again after it ran out
			}},
			final: map[string]finalItem{"a": done, "b": {found: true, State: "scheduled", Attempts: 2, Failures: 1}}, end: 5000},
		{name: "a late settle honoured before anyone claimed again", want: "",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 1000).settled("succeed", 1500),
			}},
			final: map[string]finalItem{"a": done}, end: 5000},
		{name: "an extension that shortened the lease", want: "",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 2000).extended(10, 1000),
				grant("a", "2", 2, 1100, 1000).settled("succeed", 1200),
			}},
			final: map[string]finalItem{"a": {found: true, State: "done", Attempts: 2}}, end: 5000},
		{name: "an unacknowledged fail may have ended the lease", want: "",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 2000).tried("fail", 100),
			}},
			final: map[string]finalItem{"a": {found: true, State: "scheduled", Attempts: 1}}, end: 5000},
		{name: "lost add", want: "lost add", detail: "item b",
			h:     history{adds: []addRec{{ids: []string{"a", "b"}}}},
			final: map[string]finalItem{"a": {found: true, State: "pending"}}, end: 5000},
		{name: "lost succeed", want: "lost succeed",
			h:     history{leases: []*leaseRec{grant("a", "1", 1, 0, 1000).settled("succeed", 500)}},
			final: map[string]finalItem{"a": {found: true, State: "leased", Attempts: 1}}, end: 5000},
		{name: "lost fail", want: "lost fail",
			h:     history{leases: []*leaseRec{grant("a", "1", 1, 0, 1000).settled("fail", 500)}},
			final: map[string]finalItem{"a": {found: true, State: "leased", Attempts: 1}}, end: 5000},
		{name: "claimed while another lease was valid", want: "overlap", detail: "lease 2",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 1000),
				grant("a", "2", 2, 600, 1000),
			}},
			final: map[string]finalItem{"a": {found: true, State: "leased", Attempts: 2}}, end: 5000},
		{name: "claimed before an extended lease ran out", want: "overlap",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 1000).extended(500, 2000),
				grant("a", "2", 2, 1200, 1000),
			}},
			final: map[string]finalItem{"a": {found: true, State: "leased", Attempts: 2}}, end: 5000},
		{name: "a late settle honoured after someone claimed again", want: "overlap,returned",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 1000).settled("fail", 1500),
				grant("a", "2", 2, 1200, 1000),
			}},
			final: map[string]finalItem{"a": {found: true, State: "scheduled", Attempts: 2}}, end: 5000},
		{name: "succeeded item handed out again", want: "lost succeed,returned",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 1000).settled("succeed", 100),
				grant("a", "2", 2, 300, 1000),
			}},
			final: map[string]finalItem{"a": {found: true, State: "leased", Attempts: 2}}, end: 5000},
		{name: "two acknowledged claims with one attempt number", want: "lost claim", detail: "attempt 1 after 1",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 1000),
				grant("a", "2", 1, 1500, 1000),
			}},
			final: map[string]finalItem{"a": {found: true, State: "leased", Attempts: 1, LeaseUntil: at(2500)}}, end: 5000},
		{name: "lease lost before it ran out", want: "lease lost early",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 1000).lostAt("succeed", 400),
			}},
			final: map[string]finalItem{"a": {found: true, State: "leased", Attempts: 1}}, end: 5000},
		{name: "an acknowledged extension forgotten", want: "lost extend",
			h: history{leases: []*leaseRec{
				grant("a", "1", 1, 0, 1000).extended(500, 9000),
			}},
			final: map[string]finalItem{"a": {found: true, State: "leased", Attempts: 1, LeaseUntil: at(1000)}}, end: 5000},
		{name: "the until does not match the claim's time", want: "bad lease",
			h: history{leases: []*leaseRec{func() *leaseRec {
				l := grant("a", "1", 1, 0, 1000)
				l.length = 500 * time.Millisecond
				return l
			}()}},
			final: map[string]finalItem{"a": {found: true, State: "scheduled", Attempts: 1}}, end: 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := tc.h.check(tc.final, at(tc.end))
			if tc.want == "" {
				if len(vs) != 0 {
					t.Fatalf("violations in a clean history:\n%s", summarize(vs, 10))
				}
				return
			}
			var kinds []string
			for _, v := range vs {
				kinds = append(kinds, v.kind)
			}
			slices.Sort(kinds)
			if strings.Join(kinds, ",") != tc.want || !strings.Contains(vs[0].String(), tc.detail) {
				t.Fatalf("want %s, the first mentioning %q; got:\n%s", tc.want, tc.detail, summarize(vs, 10))
			}
		})
	}
}
