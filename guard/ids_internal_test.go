package guard

import (
	"context"
	"testing"
	"time"
)

// TestStaleTicketsReportIntoTheirOwnRecord evicts a record and creates it
// again: tickets of the old record, reported late, must not touch the new
// one, and the new record's numbering starts afresh.
func TestStaleTicketsReportIntoTheirOwnRecord(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := New(Config{Now: func() time.Time { return now }, Disabled: func() bool { return false }, IdleTTL: time.Minute})
	var old []*Ticket
	for range 3 {
		tk, err := g.Acquire("http://a.test/")
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, tk)
	}
	for _, tk := range old {
		tk.Release()
	}
	g.Prune()
	now = now.Add(time.Hour)
	if n := g.Prune(); n != 1 || g.Len() != 0 {
		t.Fatalf("Prune removed %d, Len %d; want the record gone", n, g.Len())
	}
	tk, err := g.Acquire("http://a.test/")
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Release()
	if tk.ep == old[0].ep {
		t.Fatal("the record was not recreated")
	}
	for _, o := range old {
		o.Failed(context.DeadlineExceeded)
		o.Failed(context.DeadlineExceeded)
	}
	if tk.ep.fails != 0 || tk.ep.out.Load() != 1 || tk.seq != 1 {
		t.Errorf("new record: %d failures, %d out, first seq %d", tk.ep.fails, tk.ep.out.Load(), tk.seq)
	}
}
