package migration

import (
	"errors"
	"slices"
	"testing"
	"testing/fstest"
)

func TestLoadOrdersByVersion(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0010_retry.sql":  {Data: []byte("B")},
		"m/0002_health.sql": {Data: []byte("A")},
		"m/README":          {Data: []byte("ignored")},
	}
	ms, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Version != 2 || ms[1].Version != 10 || ms[0].SQL != "A" || ms[1].Name != "retry" {
		t.Fatalf("got %+v", ms)
	}
}

func TestLoadRejectsBadNames(t *testing.T) {
	for _, name := range []string{"m/health.sql", "m/0000_x.sql", "m/abc_x.sql"} {
		if _, err := Load(fstest.MapFS{name: {Data: []byte("x")}}, "m"); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	dup := fstest.MapFS{"m/0001_a.sql": {}, "m/0001_b.sql": {}}
	if _, err := Load(dup, "m"); err == nil {
		t.Error("duplicate version: want an error")
	}
}

func TestPending(t *testing.T) {
	ms := []Migration{{Version: 1}, {Version: 2}, {Version: 5}}
	got, err := Pending(ms, map[int]bool{1: true, 5: true})
	if err != nil || len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("got %+v, %v", got, err)
	}
	_, err = Pending(ms, map[int]bool{1: true, 9: true})
	var ne *NewerError
	if !errors.As(err, &ne) || !slices.Equal(ne.Unknown, []int{9}) || !slices.Equal(ne.Known, []int{1, 2, 5}) {
		t.Fatalf("want NewerError{[9],[1 2 5]}, got %v", err)
	}
	// A version in a gap below the newest known is as unknown, and the
	// message says what this binary knows instead of calling it newer
	// than a higher number.
	_, err = Pending(ms, map[int]bool{1: true, 3: true})
	if !errors.As(err, &ne) || err.Error() != "the database has schema versions 3 that this hostguard does not know (it knows 1-2, 5): a newer hostguard migrated it; upgrade hostguard or use another database" {
		t.Fatalf("a version in a gap: %v", err)
	}
}
