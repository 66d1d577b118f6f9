package feed

import (
	"encoding/json"
	"fmt"
	"time"
)

// stateVersion is the format of the encoded cursor state; decode refuses
// newer ones, so that an older binary never misreads a newer cursor.
// Format 1 kept markers' ids in clear; format 2 keeps their IDHash. The
// store migration rewrites format 1, and decode still reads it.
const stateVersion = 2

// state is a feed's position, stored (JSON-encoded) as Cursor.State.
type state struct {
	V int `json:"v"`
	// Head is the newest item of the feed as of the last sync; nil before
	// the first one. Everything from the head down is read, except the
	// gaps.
	Head *Marker `json:"head,omitempty"`
	// Gaps are the unread stretches, newest first.
	Gaps []gap `json:"gaps,omitempty"`
	// SyncedAt is the clock reading of the last sync that saved progress.
	SyncedAt time.Time `json:"synced_at"`
}

// gap is one unread stretch of a feed: the items strictly between After
// and Before.
type gap struct {
	// After is the last item read above the gap; reading resumes below it.
	After Marker `json:"after"`
	// Span is how many items lay between the top of After's read stretch
	// (the head for the first gap, the previous gap's Before for the
	// others) and After when it was read. New items only ever arrive at
	// the top, so the distance holds until something is taken down; it is
	// a hint, and the walk checks it against After's id.
	Span int `json:"span"`
	// Before is the newest item below the gap, already read; reaching it
	// closes the gap.
	Before Marker `json:"before"`
}

func decodeState(b []byte) (state, error) {
	var s state
	if len(b) == 0 {
		return state{V: stateVersion}, nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return state{}, fmt.Errorf("feed: stored cursor is not readable: %w", err)
	}
	switch s.V {
	case stateVersion:
	case 1:
		hashMarker := func(m *Marker) { m.ID = IDHash(m.ID) }
		if s.Head != nil {
			hashMarker(s.Head)
		}
		for i := range s.Gaps {
			hashMarker(&s.Gaps[i].After)
			hashMarker(&s.Gaps[i].Before)
		}
		s.V = stateVersion
	default:
		return state{}, fmt.Errorf("feed: stored cursor has format %d; this hostguard reads formats 1 and %d", s.V, stateVersion)
	}
	return s, nil
}

func (s state) encode() []byte {
	s.V = stateVersion
	b, err := json.Marshal(s)
	if err != nil {
		// Only plain strings, ints and times are marshalled.
		panic(fmt.Sprintf("feed: encode cursor: %v", err))
	}
	return b
}
