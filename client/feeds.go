package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hostguard/hostguard/api"
)

// Feeds are the indexer feeds the leading daemon follows.
type Feeds struct{ c *Client }

// List returns every feed the daemon follows or has a stored position
// for.
func (f *Feeds) List(ctx context.Context) (api.FeedList, error) {
	var res api.FeedList
	err := f.c.call(ctx, http.MethodGet, "/v1/feeds", nil, nil, &res, routePlain)
	return res, err
}

// Items returns the newest items the daemon kept from a feed, newest
// first; limit 0 returns every item kept.
func (f *Feeds) Items(ctx context.Context, name string, limit int) ([]api.FeedItem, error) {
	var q url.Values
	if limit > 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	var res api.FeedItems
	err := f.c.call(ctx, http.MethodGet, "/v1/feeds/"+seg(name)+"/items", q, nil, &res, routePlain)
	return res.Items, err
}

// Reset forgets a feed's stored position: its next sync reads the head
// page only, as a first sync does.
func (f *Feeds) Reset(ctx context.Context, name string) (api.FeedReset, error) {
	var res api.FeedReset
	err := f.c.call(ctx, http.MethodPost, "/v1/feeds/"+seg(name)+"/reset", nil, nil, &res, routePlain)
	return res, err
}
