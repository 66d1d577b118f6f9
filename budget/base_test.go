package budget_test

import (
	"slices"
	"testing"

	"github.com/hostguard/hostguard/budget"
)

func limitOf(b *budget.Budget, name string) int64 {
	for _, s := range b.Sources() {
		if s.Name == name && s.OwnerDailyLimit != nil {
			return *s.OwnerDailyLimit
		}
	}
	return -1
}

// TestReplaceBaseSourceStoresNothing: a re-read configuration changes the
// configured source of this Budget only; a Budget started later over the
// same store (a restart with the file as it was) sees no override, and a
// stored override still wins and is named.
func TestReplaceBaseSourceStoresNothing(t *testing.T) {
	f := setup(t, budget.Config{Sources: []budget.Source{{Name: "idx", OwnerDailyLimit: budget.Int(100)}}})
	changed, err := f.b.ReplaceBaseSource(budget.Source{Name: "idx", OwnerDailyLimit: budget.Int(200)})
	if err != nil || !changed {
		t.Fatalf("ReplaceBaseSource: %v, %v", changed, err)
	}
	if changed, err := f.b.ReplaceBaseSource(budget.Source{Name: "idx", OwnerDailyLimit: budget.Int(200)}); err != nil || changed {
		t.Fatalf("the same source again: %v, %v; want false, nil", changed, err)
	}
	if err := f.b.Refresh(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := limitOf(f.b, "idx"); got != 200 {
		t.Fatalf("idx limit %d after the replacement, want 200", got)
	}
	if got := f.b.Overridden(); len(got) != 0 {
		t.Fatalf("Overridden = %v after a replacement, want none", got)
	}
	later, err := budget.New(f.st, budget.Config{Now: f.clock.Now, Sources: []budget.Source{{Name: "idx", OwnerDailyLimit: budget.Int(300)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := later.Refresh(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := limitOf(later, "idx"); got != 300 || len(later.Overridden()) != 0 {
		t.Fatalf("a later start sees idx at %d, overrides %v; want 300 and none", got, later.Overridden())
	}
	if err := f.b.SetSource(ctx(t), budget.Source{Name: "idx", OwnerDailyLimit: budget.Int(5)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.ReplaceBaseSource(budget.Source{Name: "idx", OwnerDailyLimit: budget.Int(400)}); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Refresh(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := limitOf(f.b, "idx"); got != 5 || !slices.Equal(f.b.Overridden(), []string{"idx"}) {
		t.Fatalf("with a stored override: idx at %d, overrides %v; want 5 and [idx]", got, f.b.Overridden())
	}
	if _, err := f.b.ReplaceBaseSource(budget.Source{Name: "bad\x00"}); err == nil {
		t.Fatal("a bad source was taken")
	}
}
