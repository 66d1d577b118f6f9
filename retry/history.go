package retry

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hostguard/hostguard/internal/inputtext"
)

// HistoryLen is how many failures an item remembers; older ones are dropped.
const HistoryLen = 8

// MaxNoteBytes is the longest note kept with a failure; longer notes are
// cut (at a character boundary), not refused, since they usually come from
// error messages the caller does not control.
const MaxNoteBytes = 200

// MaxClassBytes is the longest failure class accepted.
const MaxClassBytes = 64

// Attempt is one remembered failure.
type Attempt struct {
	At    time.Time `json:"at"`
	Class string    `json:"class"`
	Note  string    `json:"note,omitempty"`
}

// appendHistory returns h with a appended, keeping only the newest
// HistoryLen entries. It never modifies h's backing array.
func appendHistory(h []Attempt, a Attempt) []Attempt {
	keep := h
	if len(keep) >= HistoryLen {
		keep = keep[len(keep)-HistoryLen+1:]
	}
	out := make([]Attempt, 0, len(keep)+1)
	return append(append(out, keep...), a)
}

// encodeHistory packs a history for storage as a compact JSON array of
// [unix milliseconds, class, note] triples (the note is omitted when empty).
// An empty history encodes as nil, which stores as NULL.
func encodeHistory(h []Attempt) []byte {
	if len(h) == 0 {
		return nil
	}
	rows := make([][]any, len(h))
	for i, a := range h {
		if a.Note == "" {
			rows[i] = []any{a.At.UnixMilli(), a.Class}
		} else {
			rows[i] = []any{a.At.UnixMilli(), a.Class, a.Note}
		}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		// Strings and integers always marshal.
		panic(fmt.Sprintf("retry: encode history: %v", err))
	}
	return b
}

// decodeHistory is the inverse of encodeHistory. Empty input is an empty
// history. Malformed input is an error, never a panic.
func decodeHistory(b []byte) ([]Attempt, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("stored history is not a JSON array: %w", err)
	}
	out := make([]Attempt, 0, len(rows))
	for i, raw := range rows {
		var fields []json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil || len(fields) < 2 || len(fields) > 3 {
			return nil, fmt.Errorf("stored history entry %d is not [time, class] or [time, class, note]", i)
		}
		var a Attempt
		var ms int64
		if err := json.Unmarshal(fields[0], &ms); err != nil {
			return nil, fmt.Errorf("stored history entry %d: time: %w", i, err)
		}
		a.At = time.UnixMilli(ms).UTC()
		if err := json.Unmarshal(fields[1], &a.Class); err != nil {
			return nil, fmt.Errorf("stored history entry %d: class: %w", i, err)
		}
		if len(fields) == 3 {
			if err := json.Unmarshal(fields[2], &a.Note); err != nil {
				return nil, fmt.Errorf("stored history entry %d: note: %w", i, err)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// checkClass rejects class names that would make poor map keys and
// labels. Its error's Field is "class".
func checkClass(class string) error {
	switch {
	case class == "":
		return invalid("class", "is empty")
	case len(class) > MaxClassBytes:
		return invalid("class", "%.32q... is %d bytes, more than %d", class, len(class), MaxClassBytes)
	}
	if err := inputtext.Check(class); err != nil {
		return invalid("class", "%q %v", class, err)
	}
	return nil
}

// checkNote rejects notes with bytes that would be replaced or corrupt a
// log; a long note is cut by clipNote instead, since its length is not the
// caller's choice. Its error's Field is "note".
func checkNote(note string) error {
	if err := inputtext.Check(note); err != nil {
		return invalid("note", "%v", err)
	}
	return nil
}

// clipNote makes a note storable: valid UTF-8 without NUL, at most
// MaxNoteBytes, cut at a character boundary.
func clipNote(note string) string {
	note = strings.ToValidUTF8(note, "\uFFFD")
	note = strings.ReplaceAll(note, "\x00", "")
	if len(note) <= MaxNoteBytes {
		return note
	}
	cut := MaxNoteBytes
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut]
}
