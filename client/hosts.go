package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hostguard/hostguard/api"
)

// Hosts is the durable per-host backoff of the host tracker.
type Hosts struct{ c *Client }

// Touch records one outcome for a host: ok is true if it answered.
func (h *Hosts) Touch(ctx context.Context, name string, ok bool) (api.TouchResult, error) {
	var res api.TouchResult
	err := h.c.call(ctx, http.MethodPost, "/v1/hosts/"+seg(name)+"/touch", nil, api.TouchRequest{OK: &ok}, &res, routePlain)
	return res, err
}

// Get returns a host's record; a host never touched (or reset) is
// ErrNotFound.
func (h *Hosts) Get(ctx context.Context, name string) (api.Host, error) {
	var res api.Host
	err := h.c.call(ctx, http.MethodGet, "/v1/hosts/"+seg(name), nil, nil, &res, routePlain)
	return res, err
}

// Reset forgets the host's failures, ending its backoff; the result's
// Reset is false when the daemon held no record of it.
func (h *Hosts) Reset(ctx context.Context, name string) (api.HostReset, error) {
	var res api.HostReset
	err := h.c.call(ctx, http.MethodPost, "/v1/hosts/"+seg(name)+"/reset", nil, nil, &res, routePlain)
	return res, err
}

// List returns one page of hosts in a view (all, healthy, available,
// unhealthy, backoff; empty is all). limit 0 is the daemon's default;
// after is the previous page's Next.
func (h *Hosts) List(ctx context.Context, view string, limit int, after string) (api.HostPage, error) {
	q := url.Values{}
	if view != "" {
		q.Set("view", view)
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if after != "" {
		q.Set("after", after)
	}
	var res api.HostPage
	err := h.c.call(ctx, http.MethodGet, "/v1/hosts", q, nil, &res, routePlain)
	return res, err
}

// All yields every host in a view, page after page, and stops at the
// first error, which it yields.
func (h *Hosts) All(ctx context.Context, view string) iter.Seq2[api.Host, error] {
	return pages("", func(after string) ([]api.Host, string, error) {
		page, err := h.List(ctx, view, 0, after)
		return page.Hosts, page.Next, err
	})
}
