package api

import "time"

// Feed is one feed in GET /v1/feeds: its stored position, which every
// node shares, and what this node's loop did with it.
type Feed struct {
	Name string `json:"name"`
	// Configured is false for a feed that has a stored position but is no
	// longer in the daemon's configuration; reset it to forget it.
	Configured bool   `json:"configured"`
	URL        string `json:"url,omitempty"`

	// The stored position.
	Synced     bool        `json:"synced"`
	SyncedAt   *time.Time  `json:"synced_at,omitempty"`
	Head       *FeedMarker `json:"head,omitempty"`
	ItemsTotal int64       `json:"items_total"`
	Gaps       int         `json:"gaps"`

	// This node's loop; empty where this node never polled the feed.
	Leading         bool       `json:"leading"`
	LastSync        *time.Time `json:"last_sync,omitempty"`
	LastHeadPoll    *time.Time `json:"last_head_poll,omitempty"`
	LastItems       int        `json:"last_items"`
	LastPages       int        `json:"last_pages"`
	LastStop        string     `json:"last_stop,omitempty"`
	LastError       string     `json:"last_error,omitempty"`
	LastSuccess     *time.Time `json:"last_success,omitempty"`
	Failures        int64      `json:"failures"`
	RetryAt         *time.Time `json:"retry_at,omitempty"`
	LastSkipped     int        `json:"last_skipped"`
	Skipped         int64      `json:"skipped"`
	ItemsSeen       int64      `json:"items_seen"`
	IntervalSeconds float64    `json:"interval_seconds"`
	NextHeadPoll    *time.Time `json:"next_head_poll,omitempty"`
	NextResume      *time.Time `json:"next_resume,omitempty"`
}

// FeedMarker is the newest item of a feed's stored position.
type FeedMarker struct {
	// ID is left out for a feed that is no longer configured.
	ID        string    `json:"id,omitempty"`
	Published time.Time `json:"published"`
}

// FeedList answers GET /v1/feeds.
type FeedList struct {
	// Leading is whether this node runs the feed polls now.
	Leading bool   `json:"leading"`
	Feeds   []Feed `json:"feeds"`
}

// FeedReset answers POST /v1/feeds/{name}/reset.
type FeedReset struct {
	Name string `json:"name"`
	// HadPosition says whether a stored position was forgotten.
	HadPosition bool `json:"had_position"`
}

// FeedItem is a feed item as the API shows it: never the download link,
// and never the API key, which indexers put into links and sometimes into
// guids.
type FeedItem struct {
	ID        string            `json:"id"`
	Title     string            `json:"title"`
	Published time.Time         `json:"published"`
	Size      int64             `json:"size"`
	Attrs     map[string]string `json:"attrs,omitempty"`
}

// FeedItems answers GET /v1/feeds/{name}/items, newest first.
type FeedItems struct {
	Feed  string     `json:"feed"`
	Items []FeedItem `json:"items"`
}
