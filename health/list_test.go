package health_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/health"
)

func names(sts []health.Status) []string {
	out := make([]string, len(sts))
	for i, s := range sts {
		out[i] = s.Name
	}
	return out
}

func TestListAndCounts(t *testing.T) {
	t.Parallel()
	b := setup(t, noOutage)
	touch(t, b.tr, "c-ok", true)
	touch(t, b.tr, "a-down", false)
	touch(t, b.tr, "a-down", false) // 10s
	b.clock.Advance(6 * time.Second)
	touch(t, b.tr, "b-flaky", false) // 5s from now
	b.clock.Advance(5 * time.Second) // a-down available (11s > 10s), b-flaky available exactly now
	touch(t, b.tr, "d-down", false)  // in backoff

	cases := []struct {
		view health.View
		want []string
	}{
		{"", []string{"a-down", "b-flaky", "c-ok", "d-down"}},
		{health.All, []string{"a-down", "b-flaky", "c-ok", "d-down"}},
		{health.Healthy, []string{"c-ok"}},
		{health.Unhealthy, []string{"a-down", "b-flaky", "d-down"}},
		{health.Available, []string{"a-down", "b-flaky", "c-ok"}},
		{health.Backoff, []string{"d-down"}},
	}
	for _, c := range cases {
		got, err := b.tr.List(bg(), health.ListParams{View: c.view})
		if err != nil || !slices.Equal(names(got), c.want) {
			t.Errorf("List(%q) = %v, %v; want %v", c.view, names(got), err, c.want)
		}
		for _, st := range got {
			if !st.Known || st.Healthy != (st.ConsecutiveFails == 0) || st.Available != (st.RetryIn == 0) {
				t.Errorf("List(%q): inconsistent status %+v", c.view, st)
			}
		}
	}
	page1, err := b.tr.List(bg(), health.ListParams{Limit: 3})
	if err != nil || len(page1) != 3 {
		t.Fatalf("List limit 3: %v, %v", names(page1), err)
	}
	page2, err := b.tr.List(bg(), health.ListParams{Limit: 3, After: page1[2].Name})
	if err != nil || !slices.Equal(names(page2), []string{"d-down"}) {
		t.Fatalf("second page: %v, %v; want [d-down]", names(page2), err)
	}
	c, err := b.tr.Counts(bg())
	if err != nil || c != (health.Counts{Known: 4, Unhealthy: 3, Backoff: 1}) {
		t.Fatalf("Counts = %+v, %v", c, err)
	}
}

func TestListBadParams(t *testing.T) {
	t.Parallel()
	b := setup(t, health.Config{})
	for _, c := range []struct {
		p     health.ListParams
		field string
	}{
		{health.ListParams{View: "sideways"}, "view"},
		{health.ListParams{View: "Healthy"}, "view"},
		{health.ListParams{Limit: -1}, "limit"},
		{health.ListParams{Limit: health.MaxListLimit + 1}, "limit"},
		{health.ListParams{After: "a\x00"}, "after"},
		{health.ListParams{After: "a\xff"}, "after"},
		{health.ListParams{After: strings.Repeat("a", health.MaxNameLen+1)}, "after"},
	} {
		_, err := b.tr.List(bg(), c.p)
		var ie *health.InputError
		if !errors.As(err, &ie) || ie.Field != c.field || !errors.Is(err, health.ErrInvalid) {
			t.Errorf("List(%+v): error %v; want one naming %s", c.p, err, c.field)
		}
	}
}

func TestParseView(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]health.View{
		"healthy": health.Healthy, " Available ": health.Available, "UNHEALTHY": health.Unhealthy,
		"backoff": health.Backoff, "all": health.All,
	} {
		if v, err := health.ParseView(in); err != nil || v != want {
			t.Errorf("ParseView(%q) = %q, %v; want %q", in, v, err, want)
		}
	}
	for _, in := range []string{"", "sick", "healthy,available"} {
		if _, err := health.ParseView(in); err == nil || !strings.HasPrefix(err.Error(), "health: ") {
			t.Errorf("ParseView(%q): error %v; want a health: error", in, err)
		}
	}
}
