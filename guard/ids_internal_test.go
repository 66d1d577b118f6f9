package guard

import (
	"testing"
	"time"
)

// TestAdmissionIDsNeverReused evicts a record and creates it again: the new
// record's admissions must sort after every admission of the old one, so a
// stale ticket can never pass for a newer one.
func TestAdmissionIDsNeverReused(t *testing.T) {
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
		if !tk.id.after(o.id) || tk.id == o.id {
			t.Errorf("new admission %+v does not follow old %+v", tk.id, o.id)
		}
	}
}
