package feed

import (
	"context"
	"fmt"
	"time"
)

// Status describes one feed's stored position.
type Status struct {
	Name string `json:"name"`
	// Synced is false until the feed's first sync saved its head.
	Synced bool `json:"synced"`
	// SyncedAt is when a sync last saved progress.
	SyncedAt time.Time `json:"synced_at"`
	// Head is the newest item seen.
	Head Marker `json:"head"`
	// Items counts the items handed out over the feed's life.
	Items int64 `json:"items"`
	// Gaps counts the unread stretches waiting to be resumed.
	Gaps int `json:"gaps"`
	// Remembered is how many handed-out item ids are kept for recognising
	// re-read items.
	Remembered int64 `json:"remembered"`
}

func statusOf(c Cursor) (Status, error) {
	st := Status{Name: c.Name, Remembered: c.Seen, Items: c.Items}
	s, err := decodeState(c.State)
	if err != nil {
		return st, err
	}
	st.Synced = s.Head != nil
	st.SyncedAt = s.SyncedAt
	if s.Head != nil {
		st.Head = *s.Head
	}
	st.Gaps = len(s.Gaps)
	return st, nil
}

// Status returns the stored position of feed name; a feed never synced
// has Synced false.
func (s *Syncer) Status(ctx context.Context, name string) (Status, error) {
	if err := checkName("name", name); err != nil {
		return Status{}, err
	}
	c, ok, err := s.st.FeedCursor(ctx, name)
	if err != nil {
		return Status{}, fmt.Errorf("feed: %s: read cursor: %w", name, err)
	}
	if !ok {
		return Status{Name: name}, nil
	}
	return statusOf(c)
}

// Statuses returns the stored position of every feed, by name.
func (s *Syncer) Statuses(ctx context.Context) ([]Status, error) {
	cs, err := s.st.FeedCursors(ctx)
	if err != nil {
		return nil, fmt.Errorf("feed: read cursors: %w", err)
	}
	out := make([]Status, 0, len(cs))
	for _, c := range cs {
		st, err := statusOf(c)
		if err != nil {
			return nil, fmt.Errorf("%w (feed %s)", err, c.Name)
		}
		out = append(out, st)
	}
	return out, nil
}

// Reset forgets feed name's position and handed-out ids: its next sync is
// a first sync. It reports whether the feed had a stored position.
func (s *Syncer) Reset(ctx context.Context, name string) (bool, error) {
	if err := checkName("name", name); err != nil {
		return false, err
	}
	defer s.lock(name)()
	ok, err := s.st.FeedReset(ctx, name)
	if err != nil {
		return false, fmt.Errorf("feed: %s: reset: %w", name, err)
	}
	return ok, nil
}
