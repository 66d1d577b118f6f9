package retry

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hostguard/hostguard/internal/inputtext"
)

// Limits on the evidence an item keeps.
const (
	// SourcesLen is how many distinct (source, class) entries an item
	// keeps; the oldest is dropped for a new one.
	SourcesLen = 8
	// MaxSourceBytes is the longest source name accepted.
	MaxSourceBytes = 128
)

// Evidence is the latest word from one source about an item: a sighting
// (Observe, Class empty) or a failure of a class (a failed outcome that
// named its Source).
type Evidence struct {
	Source string    `json:"source"`
	At     time.Time `json:"at"`
	Class  string    `json:"class,omitempty"`
}

// noteEvidence returns es with e recorded: an entry for the same source
// and class moves to the end with the new time. Beyond SourcesLen entries
// the oldest sighting goes first, the oldest failure only when there is no
// sighting left: sightings come often and cheaply, while the failures are
// what escalation by sources counts. It never modifies es's backing array.
func noteEvidence(es []Evidence, e Evidence) []Evidence {
	out := make([]Evidence, 0, len(es)+1)
	for _, old := range es {
		if old.Source != e.Source || old.Class != e.Class {
			out = append(out, old)
		}
	}
	out = append(out, e)
	for len(out) > SourcesLen {
		drop := 0
		for k, old := range out[:len(out)-1] {
			if old.Class == "" {
				drop = k
				break
			}
		}
		out = slices.Delete(out, drop, drop+1)
	}
	return out
}

// hasEvidence reports whether es holds an entry of source and class.
func hasEvidence(es []Evidence, source, class string) bool {
	for _, e := range es {
		if e.Source == source && e.Class == class {
			return true
		}
	}
	return false
}

// distinctSources counts the sources that reported class.
func distinctSources(es []Evidence, class string) int {
	n := 0
	for _, e := range es {
		if e.Class == class {
			n++ // entries are distinct by (source, class)
		}
	}
	return n
}

// encodeEvidence packs evidence for storage as a compact JSON array of
// [unix milliseconds, source] (a sighting) or [unix milliseconds, source,
// class] entries. None encodes as nil, which stores as NULL.
func encodeEvidence(es []Evidence) []byte {
	if len(es) == 0 {
		return nil
	}
	rows := make([][]any, len(es))
	for i, e := range es {
		if e.Class == "" {
			rows[i] = []any{e.At.UnixMilli(), e.Source}
		} else {
			rows[i] = []any{e.At.UnixMilli(), e.Source, e.Class}
		}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		// Strings and integers always marshal.
		panic(fmt.Sprintf("retry: encode evidence: %v", err))
	}
	return b
}

// decodeEvidence is the inverse of encodeEvidence. Empty input is no
// evidence; malformed input is an error, never a panic.
func decodeEvidence(b []byte) ([]Evidence, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var rows [][]json.RawMessage
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("stored evidence is not a JSON array of arrays: %w", err)
	}
	out := make([]Evidence, 0, len(rows))
	for i, f := range rows {
		if len(f) < 2 || len(f) > 3 {
			return nil, fmt.Errorf("stored evidence entry %d is not [time, source] or [time, source, class]", i)
		}
		var e Evidence
		var ms int64
		if err := json.Unmarshal(f[0], &ms); err != nil {
			return nil, fmt.Errorf("stored evidence entry %d: time: %w", i, err)
		}
		e.At = time.UnixMilli(ms).UTC()
		if err := json.Unmarshal(f[1], &e.Source); err != nil {
			return nil, fmt.Errorf("stored evidence entry %d: source: %w", i, err)
		}
		if len(f) == 3 {
			if err := json.Unmarshal(f[2], &e.Class); err != nil {
				return nil, fmt.Errorf("stored evidence entry %d: class: %w", i, err)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// checkSource rejects source names that would corrupt logs or differ
// between engines. Empty means no source. Its error's Field is "source".
func checkSource(src string) error {
	if len(src) > MaxSourceBytes {
		return invalid("source", "is %d bytes, more than %d", len(src), MaxSourceBytes)
	}
	if err := inputtext.Check(src); err != nil {
		return invalid("source", "%q %v", src, err)
	}
	return nil
}
