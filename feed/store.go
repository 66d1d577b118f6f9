package feed

import (
	"context"
	"errors"
	"time"
)

// ErrConflict is returned when another sync (on this node or another)
// changed a feed's cursor between this sync's read and its commit. Nothing
// of the losing sync is stored; it may simply run again.
var ErrConflict = errors.New("feed: the cursor was changed by another sync")

// Store is the durable state a Syncer needs. store/sqlite and
// store/postgres implement it.
type Store interface {
	// FeedCursor returns the cursor of feed name; ok is false if the feed
	// was never synced.
	FeedCursor(ctx context.Context, name string) (c Cursor, ok bool, err error)
	// FeedCursors returns every stored cursor, by name.
	FeedCursors(ctx context.Context) ([]Cursor, error)
	// FeedCommit atomically checks the cursor's version, records item id
	// hashes as handed out, forgets old ones and, when State is not nil,
	// replaces the cursor state. See StoreCommitParams.
	FeedCommit(ctx context.Context, p StoreCommitParams) (StoreCommitResult, error)
	// FeedReset deletes a feed's cursor and recorded ids; the next sync is
	// a first sync. It reports whether there was anything to delete.
	FeedReset(ctx context.Context, name string) (bool, error)
}

// Cursor is a feed's stored position.
type Cursor struct {
	Name string
	// Version increases with every commit; a commit must name the version
	// it started from.
	Version int64
	// State is the Syncer's encoded position (opaque to the store).
	State []byte
	// Seen is how many item id hashes the feed currently has recorded.
	Seen int64
	// Items counts the hashes ever recorded as new: the items handed out
	// over the feed's life.
	Items int64
	// UpdatedAt is the clock reading of the last commit.
	UpdatedAt time.Time
}

// StoreCommitParams is the input of Store.FeedCommit.
type StoreCommitParams struct {
	Name string
	// ExpectVersion is the version the sync read (0 when there was no
	// cursor). A different stored version fails the commit with
	// ErrConflict and changes nothing.
	ExpectVersion int64
	// State replaces the cursor's state; nil keeps the stored state (an
	// empty one for a new cursor).
	State []byte
	// IDs are item id hashes (IDHash) to record as handed out, in feed
	// order. Hashes recorded earlier are left as they were, record time
	// included; the others count towards Cursor.Items.
	IDs []string
	// Now is the commit time: the hashes' record time and the cursor's
	// UpdatedAt.
	Now time.Time
	// SeenCap bounds how many hashes one feed keeps; the oldest go first,
	// after IDs are recorded. 0 means no bound.
	SeenCap int
	// ForgetBefore, when not zero, drops the feed's hashes recorded
	// before it, after IDs are recorded (a hash recorded long ago and
	// offered again is not new in this commit).
	ForgetBefore time.Time
}

// StoreCommitResult is the output of Store.FeedCommit.
type StoreCommitResult struct {
	// Version is the cursor's new version.
	Version int64
	// New holds the hashes of StoreCommitParams.IDs that were not recorded
	// before, in the given order.
	New []string
	// Forgotten is how many hashes SeenCap and ForgetBefore dropped.
	Forgotten int64
}
