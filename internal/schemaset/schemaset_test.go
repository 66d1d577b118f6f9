package schemaset

import (
	"slices"
	"testing"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{5}, "5"},
		{[]int{3, 1, 2, 2, 10, 12, 11, 30}, "1-3, 10-12, 30"},
		{[]int{1, 3}, "1, 3"},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDiff(t *testing.T) {
	extra, missing := Diff([]int{1, 2, 3, 30}, []int{30, 16, 1, 2})
	if !slices.Equal(extra, []int{16}) || !slices.Equal(missing, []int{3}) {
		t.Fatalf("Diff: extra %v missing %v; want [16] [3]", extra, missing)
	}
}
