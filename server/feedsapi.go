package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/feed"
)

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
func (s *Server) feedViews(ctx context.Context) ([]api.Feed, error) {
	stored, err := s.feedReader.Statuses(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]feed.Status, len(stored))
	for _, st := range stored {
		byName[st.Name] = st
	}
	feeds := s.feedRunners()
	out := make([]api.Feed, 0, len(feeds)+len(stored))
	for _, f := range feeds {
		v := api.Feed{Name: f.cfg.Name, Configured: true, URL: f.display}
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
			applyStored(&v, st, f.mask)
			delete(byName, f.cfg.Name)
		}
		out = append(out, v)
	}
	for _, st := range stored {
		if _, ok := byName[st.Name]; !ok {
			continue
		}
		v := api.Feed{Name: st.Name}
		// Nobody knows this feed's key any more, and some indexers put
		// the key in ids: the head's id is left out.
		applyStored(&v, st, func(string) string { return "" })
		out = append(out, v)
	}
	return out, nil
}

func applyStored(v *api.Feed, st feed.Status, mask func(string) string) {
	v.Synced, v.SyncedAt, v.ItemsTotal, v.Gaps = st.Synced, timePtr(st.SyncedAt), st.Items, st.Gaps
	if st.Head.ID != "" {
		v.Head = &api.FeedMarker{ID: mask(st.Head.ID), Published: st.Head.Published.UTC()}
	}
}

func (s *Server) feedList(w http.ResponseWriter, r *http.Request) error {
	views, err := s.feedViews(r.Context())
	if err != nil {
		return failed("reading feed positions", err)
	}
	writeJSON(w, http.StatusOK, api.FeedList{Leading: s.leading.Load(), Feeds: views})
	return nil
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
	writeJSON(w, http.StatusOK, api.FeedReset{Name: name, HadPosition: had})
	return nil
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
	writeJSON(w, http.StatusOK, api.FeedItems{Feed: name, Items: fr.items(limit)})
	return nil
}
