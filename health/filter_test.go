package health_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/health"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	touch(t, b.tr, "ok.example", true)
	touch(t, b.tr, "flaky.example", false) // backoff 5s
	touch(t, b.tr, "down.example", false)
	touch(t, b.tr, "down.example", false) // backoff 10s
	names := []string{"new.example", "Down.Example", "ok.example", "flaky.example", "down.example", " OK.example"}
	orig := slices.Clone(names)

	type step struct {
		advance     time.Duration
		view        health.View
		wantKept    []string
		wantRemoved int
	}
	steps := []step{
		{0, health.Healthy, []string{"new.example", "ok.example", " OK.example"}, 3},
		{0, health.Available, []string{"new.example", "ok.example", " OK.example"}, 3},
		{5 * time.Second, health.Available, []string{"new.example", "ok.example", "flaky.example", " OK.example"}, 2},
		{5 * time.Second, health.Available, names, 0},
		{0, health.Healthy, []string{"new.example", "ok.example", " OK.example"}, 3},
	}
	for i, s := range steps {
		b.clock.Advance(s.advance)
		before := b.store.snapshot()
		kept, removed, err := b.tr.Filter(bg(), names, s.view)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !slices.Equal(kept, s.wantKept) || removed != s.wantRemoved {
			t.Fatalf("step %d (%s): kept %q, removed %d; want %q, %d", i, s.view, kept, removed, s.wantKept, s.wantRemoved)
		}
		after := b.store.snapshot()
		if after["blocked"]-before["blocked"] != 1 || after["get"] != before["get"] {
			t.Fatalf("step %d: Filter made %d filter queries and %d single reads; want exactly one query",
				i, after["blocked"]-before["blocked"], after["get"]-before["get"])
		}
	}
	if !slices.Equal(names, orig) {
		t.Fatalf("Filter changed its input: %q", names)
	}
}

func TestFilterHundredNamesIsOneQuery(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	var names, want []string
	for i := range 100 {
		n := fmt.Sprintf("host-%02d.example", i)
		names = append(names, n)
		if i%10 == 0 {
			touch(t, b.tr, n, false)
		} else {
			want = append(want, n)
		}
	}
	before := b.store.snapshot()["blocked"]
	kept, removed, err := b.tr.Filter(bg(), names, health.Healthy)
	if err != nil || removed != 10 || !slices.Equal(kept, want) {
		t.Fatalf("Filter of 100 = %d kept, %d removed, %v; want 90, 10", len(kept), removed, err)
	}
	if n := b.store.snapshot()["blocked"] - before; n != 1 {
		t.Fatalf("Filter of 100 names made %d store queries; want 1", n)
	}
}

func TestFilterEmptyAndBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	kept, removed, err := b.tr.Filter(bg(), nil, health.Healthy)
	if err != nil || kept == nil || len(kept) != 0 || removed != 0 {
		t.Fatalf("Filter(nil) = %v, %d, %v; want an empty list", kept, removed, err)
	}
	if n := b.store.snapshot()["blocked"]; n != 0 {
		t.Fatalf("Filter of no names queried the store %d times", n)
	}
	for _, v := range []health.View{"", health.All, health.Backoff, "HEALTHY"} {
		if _, _, err := b.tr.Filter(bg(), []string{"a"}, v); err == nil || !strings.Contains(err.Error(), "view") {
			t.Errorf("Filter with view %q: error %v; want one naming the view", v, err)
		}
	}
	_, _, err = b.tr.Filter(bg(), []string{"a.example", "b.example", "  "}, health.Healthy)
	if err == nil || !strings.Contains(err.Error(), "names[2]") || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("Filter with an empty third name: %v; want an error naming names[2]", err)
	}
}
