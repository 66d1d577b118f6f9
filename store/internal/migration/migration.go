// Package migration loads the versioned schema files that each store embeds
// and decides which of them a database still needs.
//
// A store keeps its migrations as files named NNNN_name.sql. Versions need not
// be contiguous: each capability owns its own numbers, and a database records
// every version it has applied, so the set of applied versions (not just the
// highest one) decides what is missing.
package migration

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hostguard/hostguard/internal/schemaset"
)

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads every NNNN_name.sql file in dir of fsys, ordered by version.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migration: read %s: %w", dir, err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration: file %q is not named NNNN_name.sql", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migration: version %d is used by both %q and %q", v, prev, name)
		}
		seen[v] = name
		body, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("migration: read %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Pending returns the migrations whose versions are not in applied. It
// refuses a database that has applied a version this binary does not know:
// such a database was written by a newer hostguard, and running older code
// against it could corrupt state the newer code relies on.
func Pending(ms []Migration, applied map[int]bool) ([]Migration, error) {
	known := Versions(ms)
	var unknown []int
	for v := range applied {
		if !slices.Contains(known, v) {
			unknown = append(unknown, v)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, &NewerError{Unknown: unknown, Known: known}
	}
	var out []Migration
	for _, m := range ms {
		if !applied[m.Version] {
			out = append(out, m)
		}
	}
	return out, nil
}

// Versions lists the versions of ms in ascending order.
func Versions(ms []Migration) []int {
	vs := make([]int, len(ms))
	for i, m := range ms {
		vs[i] = m.Version
	}
	slices.Sort(vs)
	return vs
}

// NewerError reports a database schema written by a newer version of
// hostguard: one with migrations this binary does not know. Versions are
// not contiguous, so an unknown one may be lower than the newest known.
type NewerError struct {
	Unknown []int // versions applied to the database but unknown here
	Known   []int // the versions this binary knows
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("the database has schema versions %s that this hostguard does not know (it knows %s): a newer hostguard migrated it; upgrade hostguard or use another database",
		schemaset.String(e.Unknown), schemaset.String(e.Known))
}
