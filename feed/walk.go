package feed

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// walker reads pages for one Sync or Resume and collects the items of the
// stretches it walks. Offsets are positions in the feed as it is while being
// read; they are estimates (the feed grows at the top and loses taken-down
// items anywhere), which the walk checks against item ids before it trusts
// them.
type walker struct {
	// ctx is the sync's context bounded by Config.SyncTimeout; parent is
	// the caller's, to tell the time bound from the caller giving up.
	ctx, parent context.Context
	limit       time.Duration // the time bound, for messages
	name        string
	src         Source
	admit       Admitter
	maxPages    int
	headNext    bool // the next request is a sync's head page

	pages   int
	read    int // pages that came back
	pageLen int // the longest page seen, for stepping back
	// topAbs is where the stored head is now, for a Resume that learned how
	// far new releases pushed it (0 otherwise).
	topAbs    int
	driftOnce bool
	items     []Item
	taken     map[string]bool
	newHead   *Marker // the first identified item of the head stretch, once read
	inHead    bool    // walking the head stretch of a Sync
	// skipped counts placeholders (items without an id) by reason, each
	// once however often it was read.
	skipped     map[string]int
	skippedSeen map[string]bool

	stop            StopReason
	refusal         error // set with StopNotAdmitted
	sourceExhausted bool  // the refusal came from the source itself
	err             error // set with StopFailed
}

// segment is one stretch being walked: from just below after (from the
// top when after is nil) down to stop (the end of the feed when stop is
// nil).
type segment struct {
	after *Marker
	stop  *Marker
	// afterAbs is where after is expected (or, for the head, where to
	// start: 0).
	afterAbs int
	// closedAt is the absolute offset of stop, once found.
	closedAt int
}

// entry is an item of a page with its id's hash, which is what markers and
// the store hold.
type entry struct {
	Item
	h string
}

// fetch admits and requests one page. It returns false when the walk must
// end; w.stop says why.
func (w *walker) fetch(offset int) ([]entry, bool) {
	if w.pages >= w.maxPages {
		w.stop = StopMaxPages
		return nil, false
	}
	if w.timedOut(offset, nil) {
		return nil, false
	}
	head := w.headNext
	w.headNext = false
	if err := w.admit.AdmitPage(w.ctx, w.name, head); err != nil {
		if w.timedOut(offset, err) {
			return nil, false
		}
		if errors.Is(err, ErrNotAdmitted) {
			w.stop, w.refusal = StopNotAdmitted, err
		} else {
			w.stop, w.err = StopFailed, fmt.Errorf("feed: %s: admit page at offset %d: %w", w.name, offset, err)
		}
		return nil, false
	}
	w.pages++
	items, err := w.src.Page(w.ctx, offset)
	if err != nil {
		if w.timedOut(offset, err) {
			return nil, false
		}
		err = fmt.Errorf("feed: %s: page at offset %d: %w", w.name, offset, err)
		switch {
		case errors.Is(err, ErrSourceExhausted):
			// The source refused, as a budget would have: nothing was
			// lost, so the pages read so far count.
			w.stop, w.refusal, w.sourceExhausted = StopNotAdmitted, err, true
		case budgetRefusal(err):
			// A budget refused the request inside the source (a
			// transport that admits requests): the same as the
			// Admitter's refusal.
			w.stop, w.refusal = StopNotAdmitted, err
		default:
			w.stop, w.err = StopFailed, err
		}
		return nil, false
	}
	w.read++
	out := make([]entry, len(items))
	for i, it := range items {
		out[i] = entry{Item: it, h: IDHash(it.ID)}
	}
	return out, true
}

// timedOut reports whether the sync's time bound is over (cause, when not
// nil, is what the bound cut short). It ends the walk like MaxPages does,
// keeping what was read; but when it cut the very first page, nothing was
// done and the sync failed.
func (w *walker) timedOut(offset int, cause error) bool {
	if w.ctx.Err() == nil || w.parent.Err() != nil {
		return false
	}
	if w.read == 0 {
		if cause == nil {
			cause = w.ctx.Err()
		}
		w.stop, w.err = StopFailed, fmt.Errorf("feed: %s: page at offset %d: the sync's time limit (%v) ran out: %w", w.name, offset, w.limit, cause)
	} else {
		w.stop = StopTimeLimit
	}
	return true
}

// take collects an item once per walk. A placeholder (no id) is counted by
// its reason instead.
func (w *walker) take(it Item) {
	if it.ID == "" {
		k := it.Skip + "\x00" + it.Title + "\x00" + it.Published.String()
		if !w.skippedSeen[k] {
			if w.skipped == nil {
				w.skipped, w.skippedSeen = map[string]int{}, map[string]bool{}
			}
			w.skippedSeen[k] = true
			reason := it.Skip
			if reason == "" {
				reason = "no id"
			}
			w.skipped[reason]++
		}
		return
	}
	if w.taken[it.ID] {
		return
	}
	w.taken[it.ID] = true
	w.items = append(w.items, it)
}

// walk reads seg until its stop marker is found (true) or the walk must end
// (false; seg.after and seg.afterAbs then say how far it got).
//
// Every page after the first of a stretch starts with the last item read,
// so the walk always checks its place by id. When the item it resumes from
// is not where expected, it searches: down while the page holds only newer
// items (new releases pushed it down), up while the page starts at or
// below it or lies past the end of the feed (something above was taken
// down, or the estimate was too deep). Each step of the search moves
// seg.afterAbs, so a search cut short by MaxPages resumes from its latest
// estimate rather than starting over. The search ends at the item itself,
// or at the place where it would be when it was taken down; reading then
// starts there, and whatever is read twice is recognised by id.
func (w *walker) walk(seg *segment) bool {
	offset := seg.afterAbs
	after := seg.after
	expect := seg.afterAbs
	inWalk := false // after is this walk's anchor, not a stored one
	for {
		items, ok := w.fetch(offset)
		if !ok {
			return false
		}
		w.pageLen = max(w.pageLen, len(items))
		if len(items) == 0 && (after == nil || offset == 0) {
			// The feed ends above the stop marker: it was taken down along
			// with everything below; nothing is left to read.
			seg.closedAt = offset
			return true
		}
		i := 0
		if after != nil {
			idx, where := 0, markerAbove
			switch {
			case len(items) == 0: // an empty page lies past the end of the feed
			case after.ID == "" && inWalk:
				// This walk's own anchor is an item the source could not
				// identify: the page was asked for at its offset, so it is
				// the first item. (A stored one is found by its time, as
				// an item taken down would be.)
				where = markerAt
			default:
				idx, where = locateAfter(items, *after)
			}
			switch {
			case where == markerBelow:
				offset += len(items)
				seg.afterAbs = offset
				continue
			case where == markerAbove && offset > 0:
				offset = max(0, offset-max(1, w.pageLen-1))
				seg.afterAbs = offset
				continue
			case where == markerAt:
				if w.driftOnce {
					// A Resume does not read the head, so the first
					// marker it finds further down than expected tells it
					// how many releases arrived since the head was read.
					w.driftOnce = false
					if d := offset + idx - expect; d > 0 {
						w.topAbs += d
					}
				}
				i = idx + 1
			default: // markerGone, or markerAbove at the very top
				i = idx
			}
			after = nil
		}
		stopIdx := -1
		if seg.stop != nil {
			stopIdx = findStop(items[i:], *seg.stop)
			if stopIdx >= 0 {
				stopIdx += i
			}
		}
		end := len(items)
		if stopIdx >= 0 {
			end = stopIdx
		}
		if w.inHead && w.newHead == nil {
			// The newest identified item is the new head; placeholders
			// above it (or whole pages of them) do not move it.
			if j := firstIdentified(items[i:end]); j >= 0 {
				m := items[i+j].marker()
				w.newHead = &m
			}
		}
		for _, e := range items[i:end] {
			w.take(e.Item)
		}
		if stopIdx >= 0 {
			seg.closedAt = offset + stopIdx
			return true
		}
		// The last identified item anchors the next page. Without one past
		// the first item, the page's last item does, by its position alone
		// (a marker without an id), so that a stretch of placeholders
		// longer than MaxPages pages is still crossed across syncs.
		j := lastIdentified(items)
		if j <= 0 {
			j = len(items) - 1
		}
		last := items[j].marker()
		seg.after, seg.afterAbs = &last, offset+j
		if j == 0 {
			// A one-item page cannot overlap the next one.
			offset++
			continue
		}
		// The next page starts with the last item read, so that the walk
		// can check its place (and notice items inserted above it).
		after, offset, expect = seg.after, seg.afterAbs, seg.afterAbs
		inWalk = true
	}
}

// firstIdentified and lastIdentified return the index of the first and
// last item that has an id, or -1.
func firstIdentified(items []entry) int {
	for i, it := range items {
		if it.ID != "" {
			return i
		}
	}
	return -1
}

func lastIdentified(items []entry) int {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].ID != "" {
			return i
		}
	}
	return -1
}

// marker is where e is in the feed, as cursors keep it: its id's hash.
func (e entry) marker() Marker { return Marker{ID: e.h, Published: e.Published.UTC()} }

type markerWhere int

const (
	markerAt    markerWhere = iota // the marker is in the page, at idx
	markerBelow                    // every item is newer: the marker is further down
	markerAbove                    // the first item is older: the marker is further up
	markerGone                     // not in the page by id; items from idx on are not newer
)

// locateAfter finds the marker the walk resumes below: by id, else by
// publish time (the marker's item may have been taken down). A page whose
// first item is not newer than the marker may have started below it
// (something above was taken down and everything moved up), so the walk
// steps back before it concludes the marker is gone; and items published at
// the marker's very time may lie on either side of it, so they are read
// again rather than risk skipping one.
func locateAfter(items []entry, m Marker) (int, markerWhere) {
	for i, it := range items {
		if it.h == m.ID && m.ID != "" {
			return i, markerAt
		}
	}
	if m.Published.IsZero() {
		return 0, markerGone
	}
	for i, it := range items {
		if !it.Published.IsZero() && !it.Published.After(m.Published) {
			if m.ID == "" && it.ID == "" && it.Published.Equal(m.Published) {
				// A stored place of an item the source could not identify,
				// and an unidentified item of its very time where it was
				// expected: take it for that item. Stepping back from it
				// would cost the pages that cross a long stretch of them.
				return i, markerAt
			}
			if i == 0 {
				return 0, markerAbove
			}
			return i, markerGone
		}
	}
	return 0, markerBelow
}

// findStop returns the index of the stop marker in items: by id, else the
// first item strictly older than it (the marker's item was taken down), else
// -1.
func findStop(items []entry, m Marker) int {
	for i, it := range items {
		if it.h == m.ID && m.ID != "" {
			return i
		}
	}
	if m.Published.IsZero() {
		return -1
	}
	for i, it := range items {
		if !it.Published.IsZero() && it.Published.Before(m.Published) {
			return i
		}
	}
	return -1
}
