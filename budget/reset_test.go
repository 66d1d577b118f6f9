package budget_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/store/sqlite"
)

func TestResetSourceGoesBackToTheConfiguration(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := budget.New(st, budget.Config{Sources: []budget.Source{{Name: "idx", OwnerDailyLimit: budget.Int(100)}}})
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := b.ResetSource(ctx, "idx"); err != nil || changed {
		t.Fatalf("reset with nothing stored: %v, %v; want false, nil", changed, err)
	}
	if err := b.SetSource(ctx, budget.Source{Name: "idx", OwnerDailyLimit: budget.Int(5)}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetSource(ctx, budget.Source{Name: "extra"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.Overridden(); !slices.Equal(got, []string{"idx"}) {
		t.Fatalf("Overridden = %v, want [idx]", got)
	}
	if changed, err := b.ResetSource(ctx, "idx"); err != nil || !changed {
		t.Fatalf("reset: %v, %v", changed, err)
	}
	if got := b.Overridden(); len(got) != 0 {
		t.Fatalf("after the reset Overridden = %v", got)
	}
	for _, s := range b.Sources() {
		if s.Name == "idx" && (s.OwnerDailyLimit == nil || *s.OwnerDailyLimit != 100) {
			t.Fatalf("idx after the reset: %+v", s)
		}
	}
	if _, err := b.ResetSource(ctx, "extra"); !errors.Is(err, budget.ErrRunTimeSource) {
		t.Fatalf("reset of a run-time source: %v", err)
	}
	if _, err := b.ResetSource(ctx, "nope"); !errors.Is(err, budget.ErrUnknownSource) {
		t.Fatalf("reset of an unknown source: %v", err)
	}
	if _, err := b.ResetSource(ctx, "bad\x00"); !errors.Is(err, budget.ErrInvalid) {
		t.Fatalf("reset of a bad name: %v", err)
	}
}
