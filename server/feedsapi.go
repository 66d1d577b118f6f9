package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/feed"
)

// feedView is one feed in GET /v1/feeds: its stored position, which every
// node shares, and what this node's loop did with it.
type feedView struct {
	Name string `json:"name"`
	// Configured is false for a feed that has a stored position but is no
	// longer in the daemon's configuration; reset it to forget it.
	Configured bool   `json:"configured"`
	URL        string `json:"url,omitempty"`

	// The stored position.
	Synced     bool        `json:"synced"`
	SyncedAt   *time.Time  `json:"synced_at,omitempty"`
	Head       *markerView `json:"head,omitempty"`
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

type markerView struct {
	// ID is left out for a feed that is no longer configured.
	ID        string    `json:"id,omitempty"`
	Published time.Time `json:"published"`
}

type feedsResponse struct {
	// Leading is whether this node runs the feed polls now.
	Leading bool       `json:"leading"`
	Feeds   []feedView `json:"feeds"`
}

// timePtr turns a zero time into an absent JSON field.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// feedViews merges the configured feeds' loops with every stored position:
// configured feeds first, in configuration order, then stored ones that
// are no longer configured, by name.
func (s *Server) feedViews(ctx context.Context) ([]feedView, error) {
	stored, err := s.feedReader.Statuses(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]feed.Status, len(stored))
	for _, st := range stored {
		byName[st.Name] = st
	}
	feeds := s.feedRunners()
	out := make([]feedView, 0, len(feeds)+len(stored))
	for _, f := range feeds {
		v := feedView{Name: f.cfg.Name, Configured: true, URL: f.display}
		for _, ls := range f.loop.Status() {
			v.Leading = ls.Leading
			v.LastSync, v.LastHeadPoll = timePtr(ls.LastSync), timePtr(ls.LastHeadPoll)
			v.LastItems, v.LastPages, v.LastStop = ls.LastItems, ls.LastPages, string(ls.LastStop)
			v.LastError, v.RetryAt = f.mask(ls.LastError), timePtr(ls.RetryAt)
			v.LastSkipped, v.Skipped = ls.LastSkipped, ls.Skipped
			v.LastSuccess, v.Failures = timePtr(ls.LastSuccess), ls.Failures
			v.ItemsSeen, v.Gaps = ls.Items, ls.Gaps
			v.IntervalSeconds = ls.Interval.Seconds()
			v.NextHeadPoll, v.NextResume = timePtr(ls.NextHeadPoll), timePtr(ls.NextResume)
		}
		if st, ok := byName[f.cfg.Name]; ok {
			v.applyStored(st, f.mask)
			delete(byName, f.cfg.Name)
		}
		out = append(out, v)
	}
	for _, st := range stored {
		if _, ok := byName[st.Name]; !ok {
			continue
		}
		v := feedView{Name: st.Name}
		// Nobody knows this feed's key any more, and some indexers put
		// the key in ids: the head's id is left out.
		v.applyStored(st, func(string) string { return "" })
		out = append(out, v)
	}
	return out, nil
}

func (v *feedView) applyStored(st feed.Status, mask func(string) string) {
	v.Synced, v.SyncedAt, v.ItemsTotal, v.Gaps = st.Synced, timePtr(st.SyncedAt), st.Items, st.Gaps
	if st.Head.ID != "" {
		v.Head = &markerView{ID: mask(st.Head.ID), Published: st.Head.Published.UTC()}
	}
}

func (s *Server) feedList(w http.ResponseWriter, r *http.Request) error {
	views, err := s.feedViews(r.Context())
	if err != nil {
		return failed("reading feed positions", err)
	}
	writeJSON(w, http.StatusOK, feedsResponse{Leading: s.leading.Load(), Feeds: views})
	return nil
}

type feedResetResponse struct {
	Name string `json:"name"`
	// HadPosition says whether a stored position was forgotten.
	HadPosition bool `json:"had_position"`
}

func (s *Server) feedReset(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	fr := s.feedByName(name)
	syncer := s.feedReader
	if fr != nil {
		// The feed's own syncer serialises the reset with its syncs.
		syncer = fr.syncer
	}
	had, err := syncer.Reset(r.Context(), name)
	if err != nil {
		return failed("resetting a feed", err)
	}
	if !had && fr == nil {
		return notFound("name", "no feed of that name is configured or stored")
	}
	if fr != nil {
		fr.forget()
	}
	s.log.Info("server: feed reset; its next sync starts at the head", "feed", name)
	writeJSON(w, http.StatusOK, feedResetResponse{Name: name, HadPosition: had})
	return nil
}

type feedItemsResponse struct {
	Feed  string     `json:"feed"`
	Items []itemView `json:"items"`
}

func (s *Server) feedItems(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	fr := s.feedByName(name)
	if fr == nil {
		return notFound("name", "no feed of that name is configured")
	}
	limit := fr.cfg.KeepItems
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > fr.cfg.KeepItems {
			return badRequest("limit", "limit %q: want a whole number from 1 to %d", v, fr.cfg.KeepItems)
		}
		limit = n
	}
	writeJSON(w, http.StatusOK, feedItemsResponse{Feed: name, Items: fr.items(limit)})
	return nil
}
