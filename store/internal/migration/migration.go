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
	"sort"
	"strconv"
	"strings"
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

// Latest is the highest version in ms, or 0.
func Latest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Pending returns the migrations whose versions are not in applied. It
// refuses a database that has applied a version this binary does not know:
// such a database was written by a newer hostguard, and running older code
// against it could corrupt state the newer code relies on.
func Pending(ms []Migration, applied map[int]bool) ([]Migration, error) {
	known := make(map[int]bool, len(ms))
	for _, m := range ms {
		known[m.Version] = true
	}
	newest := 0
	for v := range applied {
		if !known[v] && v > newest {
			newest = v
		}
	}
	if newest > 0 {
		return nil, &NewerError{Applied: newest, Supported: Latest(ms)}
	}
	var out []Migration
	for _, m := range ms {
		if !applied[m.Version] {
			out = append(out, m)
		}
	}
	return out, nil
}

// NewerError reports a database schema written by a newer version of hostguard.
type NewerError struct {
	Applied   int // a version present in the database but unknown here
	Supported int // the newest version this binary knows
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this hostguard supports (up to %d); upgrade hostguard or use another database", e.Applied, e.Supported)
}
