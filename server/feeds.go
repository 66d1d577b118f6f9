package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/feed/newznab"
	"github.com/hostguard/hostguard/server/internal/netpolicy"
	"github.com/hostguard/hostguard/transport"
)

// DefaultKeepItems is how many of a feed's newest items the daemon keeps in
// memory for GET /v1/feeds/{name}/items when Feed.KeepItems is 0.
const DefaultKeepItems = 100

// MaxKeepItems bounds Feed.KeepItems: the items are held in memory, and
// their attributes can be a few kilobytes each.
const MaxKeepItems = 10_000

// Feed is one Newznab or Torznab indexer whose recent-release listing the
// leader follows (see feed.Syncer). What the daemon does with the items it
// finds is deliberately little: it counts them and keeps the newest
// KeepItems in memory for GET /v1/feeds/{name}/items. Programs that act on
// every item embed the feed package instead.
type Feed struct {
	// Name names the feed in the store and in the API, and is the budget
	// source that pays for its polls. Required; at most 200 bytes, no
	// surrounding space or control characters. When the budget has no
	// source of that name, New adds one with the budget's defaults.
	Name string

	// URL is the indexer's API endpoint, such as https://indexer.example/api.
	// Required; http or https, with neither user:password nor an apikey
	// parameter (the key goes in APIKey). Unlike the fetch route, a feed
	// may be on a private address: the owner configured it. The daemon's
	// own listeners are refused, and so is a redirect to another origin.
	URL string

	// APIKey is the account's key. Empty (the zero value) sends none. The
	// daemon never logs it and masks it in everything the API returns.
	APIKey string

	// Categories restrict the listing to these category ids. nil (the
	// zero value): every category.
	Categories []int

	// PageSize is how many items one page asks for, lowered to the
	// indexer's maximum. 0 means newznab.DefaultPageSize (100).
	PageSize int

	// MaxPages bounds the page requests of one sync. 0 means
	// feed.DefaultMaxPages (5).
	MaxPages int

	// CatchUp is how many pages below the head the feed's first sync also
	// reads. 0 (the zero value): the first sync reads the head page only.
	CatchUp int

	// KeepItems is how many of the newest items are kept in memory for the
	// API. 0 means DefaultKeepItems (100); at most 10 000.
	KeepItems int
}

// Validate reports the first field of f that New cannot use, as an
// *InputError whose Field is its snake_case name (url, keep_items). The
// indexer client and the syncer check the rest when New builds them.
func (f Feed) Validate() error {
	switch {
	case f.Name == "":
		return invalid("name", "is empty")
	case f.URL == "":
		return invalid("url", "is empty")
	case f.PageSize < 0:
		return invalid("page_size", "is negative (%d); want 0 (default %d) or more", f.PageSize, newznab.DefaultPageSize)
	case f.MaxPages < 0:
		return invalid("max_pages", "is negative (%d); want 0 (default %d) or more", f.MaxPages, feed.DefaultMaxPages)
	case f.CatchUp < 0:
		return invalid("catch_up", "is negative (%d); want 0 (none) or more", f.CatchUp)
	case f.KeepItems < 0 || f.KeepItems > MaxKeepItems:
		return invalid("keep_items", "is %d; want 0 (default %d) to %d", f.KeepItems, DefaultKeepItems, MaxKeepItems)
	}
	u, err := url.Parse(f.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		// The URL may hold a secret: it is not echoed.
		return invalid("url", "is not an http or https URL with a host")
	case u.User != nil:
		return invalid("url", "must not carry user:password")
	case u.Query().Has("apikey"):
		return invalid("url", "must not carry the apikey parameter; put the key in api_key")
	}
	return nil
}

// feedRunner is one configured feed: its indexer client, its syncer and
// loop, and the newest items the loop found.
type feedRunner struct {
	orig    Feed   // as configured, to tell a changed feed on reload
	cfg     Feed   // with defaults applied
	display string // the URL without its query: nothing secret
	syncer  *feed.Syncer
	loop    *feed.Loop

	// While the loop runs (this node leads): cancel stops it, done
	// closes when it has. Both are guarded by Server.feedsMu.
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	recent []api.FeedItem // newest first
}

// setupFeeds builds a runner per configured feed. The feeds share the
// server's guard, so a dead indexer shows on the status page like any
// other endpoint, but not its address policy: an indexer on the owner's
// own network is normal.
func (s *Server) setupFeeds() error {
	cfg := s.cfg
	if cfg.FeedStore != nil {
		r, err := feed.NewSyncer(cfg.FeedStore, feed.Config{Now: cfg.Now, Logger: s.log})
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		s.feedReader = r
	}
	for i, f := range cfg.Feeds {
		fr, err := s.newFeedRunner(f)
		if err != nil {
			return under(fmt.Sprintf("feeds[%d]", i), err)
		}
		s.feeds = append(s.feeds, fr)
	}
	return nil
}

// feedHTTP is the feeds' HTTP client, made with the first feed.
func (s *Server) feedHTTP() *http.Client {
	if s.feedClient != nil {
		return s.feedClient
	}
	cfg := s.cfg
	base := &http.Transport{
		Proxy: nil,
		// Private addresses are allowed (an indexer on the owner's
		// network is normal), the daemon's own listeners are not: a feed
		// pointed at them would poll the daemon's API with the key.
		// Redirects off the indexer's origin are refused by the newznab
		// client itself.
		DialContext:           netpolicy.NewDialer(true, cfg.HeaderTimeout, s.own).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.HeaderTimeout,
		ExpectContinueTimeout: time.Second,
	}
	s.feedBase.Store(base)
	// The budget admits the caps requests (pages are admitted by each
	// feed's syncer before it asks for them).
	s.feedClient = &http.Client{Transport: transport.New(transport.Config{
		Base: base, Guard: s.guard, HeaderTimeout: cfg.HeaderTimeout, IdleTimeout: cfg.IdleTimeout,
		Budget: countingBudget{cfg.Budget, s.metrics},
	})}
	return s.feedClient
}

// newFeedRunner builds f's client, syncer and loop; its loop starts when
// this node leads. Its errors name fields of f.
func (s *Server) newFeedRunner(f Feed) (*feedRunner, error) {
	cfg := s.cfg
	client, err := newznab.New(newznab.Config{
		URL: f.URL, APIKey: f.APIKey, Name: f.Name, HTTPClient: s.feedHTTP(),
		PageSize: f.PageSize, Categories: f.Categories, Budget: cfg.Budget, Now: cfg.Now,
	})
	if err != nil {
		return nil, err
	}
	if _, ok := s.findSource(f.Name); !ok {
		// A base source of this node, not a stored override: it
		// lives as long as the feed is configured.
		if _, err := cfg.Budget.AddBaseSource(budget.Source{Name: f.Name}); err != nil {
			return nil, err
		}
	}
	syncer, err := feed.NewSyncer(cfg.FeedStore, feed.Config{
		MaxPages: f.MaxPages, CatchUp: f.CatchUp, Admitter: countingAdmitter{feed.BudgetAdmitter(cfg.Budget), s.metrics}, Now: cfg.Now, Logger: s.log,
	})
	if err != nil {
		return nil, err
	}
	orig := f
	if f.KeepItems == 0 {
		f.KeepItems = DefaultKeepItems
	}
	u, _ := url.Parse(f.URL) // checked by Validate
	fr := &feedRunner{orig: orig, cfg: f, display: u.Scheme + "://" + u.Host + u.EscapedPath(), syncer: syncer}
	fr.loop, err = feed.NewLoop(feed.LoopConfig{
		Syncer:    syncer,
		Feeds:     []feed.LoopFeed{{Name: f.Name, Source: client}},
		Intervals: cfg.Budget,
		OnItems:   fr.found,
		Now:       cfg.Now,
		Logger:    s.log,
	})
	if err != nil {
		return nil, err
	}
	return fr, nil
}

// feedRunners is the configured feeds now.
func (s *Server) feedRunners() []*feedRunner {
	s.feedsMu.Lock()
	defer s.feedsMu.Unlock()
	return slices.Clone(s.feeds)
}

// runFeeds runs every feed's loop under ctx, the leadership; feeds
// added by SetFeeds while it lasts start under it too. It returns once
// ctx has ended and every loop has stopped.
func (s *Server) runFeeds(ctx context.Context) {
	s.feedsMu.Lock()
	s.leadCtx = ctx
	for _, f := range s.feeds {
		s.startFeedLocked(f)
	}
	s.feedsMu.Unlock()
	<-ctx.Done()
	s.feedsMu.Lock()
	s.leadCtx = nil
	running := slices.Clone(s.feeds)
	s.feedsMu.Unlock()
	for _, f := range running {
		s.stopFeed(f)
	}
}

func (s *Server) startFeedLocked(f *feedRunner) {
	if s.leadCtx == nil || f.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(s.leadCtx)
	done := make(chan struct{})
	f.cancel, f.done = cancel, done
	go func() {
		defer close(done)
		_ = f.loop.RunLeading(ctx)
	}()
}

// stopFeed stops f's loop, if it runs, and waits for it.
func (s *Server) stopFeed(f *feedRunner) {
	s.feedsMu.Lock()
	cancel, done := f.cancel, f.done
	f.cancel, f.done = nil, nil
	s.feedsMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// SetFeeds replaces the configured feeds, as a reload of the
// configuration file does: a feed no longer listed stops polling, a new
// one starts (at once, if this node leads), a changed one restarts with
// its new settings, and an unchanged one keeps running untouched. Stored
// state (each feed's cursor and seen ids, by name) is kept: a feed that
// comes back resumes where it was. The recent items shown by the API
// survive a change of the feed's settings. feeds is checked as
// Config.Feeds is, and a bad one changes nothing.
func (s *Server) SetFeeds(feeds []Feed) (added, removed, changed []string, err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	next := s.cfg
	next.Feeds = feeds
	if err := next.validateFeeds(); err != nil {
		return nil, nil, nil, err
	}
	old := map[string]*feedRunner{}
	for _, f := range s.feedRunners() {
		old[f.cfg.Name] = f
	}
	list := make([]*feedRunner, 0, len(feeds))
	var stale []*feedRunner
	for i, f := range feeds {
		prev, had := old[f.Name]
		delete(old, f.Name)
		if had && reflect.DeepEqual(prev.orig, f) {
			list = append(list, prev)
			continue
		}
		fr, err := s.newFeedRunner(f)
		if err != nil {
			return nil, nil, nil, under(fmt.Sprintf("feeds[%d]", i), err)
		}
		if had {
			changed = append(changed, f.Name)
			stale = append(stale, prev)
			prev.mu.Lock()
			fr.recent = prev.recent[:min(len(prev.recent), fr.cfg.KeepItems)]
			prev.mu.Unlock()
		} else {
			added = append(added, f.Name)
		}
		list = append(list, fr)
	}
	for name, f := range old {
		removed = append(removed, name)
		stale = append(stale, f)
	}
	sort.Strings(removed)
	// The old loops stop before their replacements start, so one feed is
	// never polled by two loops at once.
	s.feedsMu.Lock()
	s.feeds = list
	s.feedsMu.Unlock()
	for _, f := range stale {
		s.stopFeed(f)
	}
	s.feedsMu.Lock()
	for _, f := range list {
		s.startFeedLocked(f)
	}
	s.feedsMu.Unlock()
	return added, removed, changed, nil
}

func (s *Server) feedByName(name string) *feedRunner {
	for _, f := range s.feedRunners() {
		if f.cfg.Name == name {
			return f
		}
	}
	return nil
}

// found keeps the newest items of a sync; the loop calls it.
func (f *feedRunner) found(_ context.Context, _ string, items []feed.Item) {
	views := make([]api.FeedItem, 0, min(len(items), f.cfg.KeepItems))
	for _, it := range items[:min(len(items), f.cfg.KeepItems)] {
		v := api.FeedItem{ID: f.mask(it.ID), Title: f.mask(it.Title), Published: it.Published.UTC(), Size: it.Size}
		for k, val := range it.Attrs {
			if k == "link" {
				continue
			}
			if v.Attrs == nil {
				v.Attrs = make(map[string]string, len(it.Attrs))
			}
			v.Attrs[k] = f.mask(val)
		}
		views = append(views, v)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	keep := append(views, f.recent...)
	// A resumed gap yields items older than those of the last head poll.
	sort.SliceStable(keep, func(i, j int) bool { return keep[i].Published.After(keep[j].Published) })
	f.recent = keep[:min(len(keep), f.cfg.KeepItems)]
}

func (f *feedRunner) items(limit int) []api.FeedItem {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]api.FeedItem, min(limit, len(f.recent)))
	copy(out, f.recent)
	return out
}

func (f *feedRunner) forget() {
	f.mu.Lock()
	f.recent = nil
	f.mu.Unlock()
}

// mask hides the API key wherever an indexer echoed it.
func (f *feedRunner) mask(s string) string {
	return maskSecret(s, f.cfg.APIKey)
}

func maskSecret(s, secret string) string {
	if secret == "" {
		return s
	}
	s = strings.ReplaceAll(s, secret, "REDACTED")
	if esc := url.QueryEscape(secret); esc != secret {
		s = strings.ReplaceAll(s, esc, "REDACTED")
	}
	return s
}
