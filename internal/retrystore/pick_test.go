package retrystore

import (
	"fmt"
	"testing"
)

func TestPick(t *testing.T) {
	t.Parallel()
	mk := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint(prefix, i)
		}
		return out
	}
	steps := []struct {
		pending, scheduled, n, quota int
		want                         string
	}{
		{10, 10, 10, 3, "[p0 p1 p2 p3 p4 p5 p6 s0 s1 s2]"},
		{1, 10, 10, 3, "[p0 s0 s1 s2 s3 s4 s5 s6 s7 s8]"}, // retries fill what pending leaves
		{10, 1, 5, 3, "[p0 p1 p2 p3 s0]"},                 // pending fill what retries leave
		{0, 4, 10, 0, "[s0 s1 s2 s3]"},                    // no pending: the quota does not apply
		{3, 0, 10, 10, "[p0 p1 p2]"},
		{0, 0, 10, 3, "[]"},
		{10, 10, 1, 1, "[s0]"},
		{10, 10, 1, 0, "[p0]"},
	}
	for _, st := range steps {
		got := fmt.Sprint(Pick(mk("p", min(st.pending, st.n)), mk("s", min(st.scheduled, st.n)), st.n, st.quota))
		if got != st.want {
			t.Errorf("Pick(%d pending, %d scheduled, n %d, quota %d) = %s, want %s", st.pending, st.scheduled, st.n, st.quota, got, st.want)
		}
	}
}
