package budget_test

import (
	"strings"
	"testing"

	"github.com/hostguard/hostguard/budget"
)

func TestParseKind(t *testing.T) {
	for _, k := range budget.Kinds {
		got, err := budget.ParseKind(" " + strings.ToUpper(string(k)) + " ")
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	for _, bad := range []string{"", "source", "total", "headpoll", strings.Repeat("x", 1000)} {
		if _, err := budget.ParseKind(bad); err == nil || len(err.Error()) > 300 {
			t.Errorf("ParseKind(%.20q...) = %v; want a short error", bad, err)
		}
	}
}

func FuzzParseKind(f *testing.F) {
	for _, k := range budget.Kinds {
		f.Add(string(k))
	}
	f.Add("Head_Poll ")
	f.Add("\x00")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := budget.ParseKind(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "budget: ") || len(err.Error()) > 300 {
				t.Fatalf("error %q", err)
			}
			return
		}
		again, err := budget.ParseKind(string(k))
		if err != nil || again != k {
			t.Fatalf("ParseKind(%q) = %q does not round-trip: %q, %v", s, k, again, err)
		}
	})
}

func FuzzParseShare(f *testing.F) {
	for _, s := range []string{"", "gentle", "normal", "unlimited", "NORMAL", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := budget.ParseShare(s)
		if err != nil {
			return
		}
		again, err := budget.ParseShare(sh.String())
		if err != nil || again != sh {
			t.Fatalf("ParseShare(%q) = %v does not round-trip", s, sh)
		}
	})
}
