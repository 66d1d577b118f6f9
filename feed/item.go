package feed

import (
	"context"
	"time"
)

// Item is one entry of a feed.
type Item struct {
	// ID identifies the item within its feed. An item without one cannot
	// be tracked: a Source returns it only as a placeholder (with Skip
	// saying why), which holds its place in the page, so that offsets
	// stay right, and is never handed out.
	ID string
	// Published is when the feed says the item appeared. The feed is
	// ordered by it, newest first.
	Published time.Time
	// Title is the item's human-readable name.
	Title string
	// Size is the item's size in bytes, or 0 if unknown.
	Size int64
	// Attrs holds any further attributes the source reports, by lower-case
	// name. It may be nil.
	Attrs map[string]string
	// Skip, on an item without an ID, says why the source could not
	// identify it ("no guid, link or enclosure URL"). The Syncer counts
	// such items by reason in Result.Skipped.
	Skip string
}

// Source serves a newest-first feed in pages.
type Source interface {
	// Page returns the items starting at offset (0 is the newest item),
	// newest first. An empty page means the feed has no items at or past
	// offset. Pages may be of any length; the Syncer asks for the next
	// page by the offsets of what it received, so an item the source
	// cannot identify belongs in the page as a placeholder (see Item.ID),
	// not left out.
	Page(ctx context.Context, offset int) ([]Item, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, offset int) ([]Item, error)

// Page calls f.
func (f SourceFunc) Page(ctx context.Context, offset int) ([]Item, error) { return f(ctx, offset) }

// Marker remembers one item's place in a feed.
type Marker struct {
	// ID is IDHash of the item's id (ids are never stored in clear); empty
	// for the place of an item the source could not identify.
	ID        string    `json:"id"`
	Published time.Time `json:"published"`
}
