// Package schemaset compares and names sets of schema versions. A
// database records every migration it has applied, and versions are not
// contiguous (each capability owns a range of numbers), so a schema is a
// set: its highest number says little about what a binary can run on.
package schemaset

import (
	"slices"
	"strconv"
	"strings"
)

// Diff returns the versions of got that are not in want (extra) and those
// of want that are not in got (missing), each in ascending order.
func Diff(want, got []int) (extra, missing []int) {
	in := func(vs []int, v int) bool { return slices.Contains(vs, v) }
	for _, v := range got {
		if !in(want, v) {
			extra = append(extra, v)
		}
	}
	for _, v := range want {
		if !in(got, v) {
			missing = append(missing, v)
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return extra, missing
}

// String names vs compactly, runs of consecutive versions as ranges:
// "1-8, 10-17, 20, 30".
func String(vs []int) string {
	vs = slices.Sorted(slices.Values(vs))
	vs = slices.Compact(vs)
	var b strings.Builder
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(vs[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(vs[j]))
		}
		i = j + 1
	}
	return b.String()
}
