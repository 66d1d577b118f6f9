package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/api"
)

// Items is the durable retry queue: POST /v1/items and the routes below
// it.
type Items struct{ c *Client }

// Add adds items; an id already queued keeps its state and history, and
// only a higher priority is taken over.
func (it *Items) Add(ctx context.Context, items ...api.NewItem) (api.AddResult, error) {
	var res api.AddResult
	err := it.c.call(ctx, http.MethodPost, "/v1/items", nil, api.AddRequest{Items: items}, &res, routePlain)
	return res, err
}

// ClaimParams are the options of Claim.
type ClaimParams struct {
	// N is the most items to lease (1 to retry.MaxClaim).
	N int
	// Lease is how long each item is held; it must be positive.
	Lease time.Duration
	// Worker is shown by Get while the lease lasts; optional.
	Worker string
	// Wait makes the claim a long poll: it answers as soon as work is
	// due, or with no leases after this long. Zero answers at once.
	Wait time.Duration
}

// Claim leases up to p.N due items, highest priority first. No lease and
// no error means nothing was due (within p.Wait).
func (it *Items) Claim(ctx context.Context, p ClaimParams) ([]api.Lease, error) {
	secs := p.Lease.Seconds()
	req := api.ClaimRequest{N: &p.N, LeaseSeconds: &secs, Worker: p.Worker}
	if p.Wait > 0 {
		w := p.Wait.Seconds()
		req.WaitSeconds = &w
	}
	var res api.ClaimResponse
	err := it.c.call(ctx, http.MethodPost, "/v1/items/claim", nil, req, &res, routeLease)
	return res.Leases, err
}

// leaseOp posts one operation on a leased item and reads its answer.
func (it *Items) leaseOp(ctx context.Context, id, op string, in, out any) error {
	return it.c.call(ctx, http.MethodPost, "/v1/items/"+seg(id)+"/"+op, nil, in, out, routeLease)
}

// Succeed says the work is done, and returns the item as it is now. A
// lease that is no longer the item's is ErrLeaseLost: drop the work.
func (it *Items) Succeed(ctx context.Context, l api.Lease) (api.Item, error) {
	var res api.Item
	err := it.leaseOp(ctx, l.ID, "succeed", api.LeaseRequest{Lease: l.Token}, &res)
	return res, err
}

// Release gives the item back without counting an attempt.
func (it *Items) Release(ctx context.Context, l api.Lease) (api.Item, error) {
	var res api.Item
	err := it.leaseOp(ctx, l.ID, "release", api.LeaseRequest{Lease: l.Token}, &res)
	return res, err
}

// FailParams say why an attempt failed.
type FailParams struct {
	// Class picks the delay ladder (timeout, not_found, ...); required.
	Class string
	// Note is kept in the item's history; optional.
	Note string
	// Source names where the failure's evidence came from; optional.
	Source string
	// Host names the host the item depends on, replacing the one it had:
	// when it answers again, an item that failed with a host-level class
	// becomes due at once. Optional.
	Host string
}

// Fail records a failed attempt; the item waits on its class's ladder.
func (it *Items) Fail(ctx context.Context, l api.Lease, p FailParams) (api.Item, error) {
	var res api.Item
	req := api.FailRequest{Lease: l.Token, Class: p.Class, Note: p.Note, Source: p.Source, Host: p.Host}
	err := it.leaseOp(ctx, l.ID, "fail", req, &res)
	return res, err
}

// Extend holds the lease for d from now and returns its new end.
func (it *Items) Extend(ctx context.Context, l api.Lease, d time.Duration) (time.Time, error) {
	var res api.ExtendResponse
	secs := d.Seconds()
	err := it.leaseOp(ctx, l.ID, "extend", api.ExtendRequest{Lease: l.Token, LeaseSeconds: &secs}, &res)
	return res.Until, err
}

// Observe records fresh evidence for an item: a waiting one becomes due
// soon and its priority rises (see retry.Scheduler.Observe).
func (it *Items) Observe(ctx context.Context, id string, p api.ObserveRequest) (api.ObserveResult, error) {
	var res api.ObserveResult
	err := it.leaseOp(ctx, id, "observe", p, &res)
	return res, err
}

// ObserveMany records sightings of many ids in one call; an unknown id's
// result says so (Unknown) unless p.AddIfMissing.
func (it *Items) ObserveMany(ctx context.Context, p api.ObserveBatchRequest) ([]api.ObserveResult, error) {
	var res api.ObserveBatchResponse
	err := it.c.call(ctx, http.MethodPost, "/v1/items/observe", nil, p, &res, routeLease)
	return res.Results, err
}

// Settle applies many leases' outcomes in one call; each result says ok,
// or why not (api.SettleLeaseLost, api.SettleNotFound, api.SettleInvalid).
func (it *Items) Settle(ctx context.Context, outcomes ...api.SettleOutcome) ([]api.SettleResult, error) {
	var res api.SettleResponse
	err := it.c.call(ctx, http.MethodPost, "/v1/items/settle", nil, api.SettleRequest{Outcomes: outcomes}, &res, routeLease)
	return res.Results, err
}

// Get returns one item, with its payload and history.
func (it *Items) Get(ctx context.Context, id string) (api.Item, error) {
	var res api.Item
	err := it.c.call(ctx, http.MethodGet, "/v1/items/"+seg(id), nil, nil, &res, routePlain)
	return res, err
}

// DueNow makes a pending or scheduled item due at once, without counting
// an attempt; the result's Moved is false for a leased, done or already
// due item.
func (it *Items) DueNow(ctx context.Context, id string) (api.DueNowResult, error) {
	var res api.DueNowResult
	err := it.c.call(ctx, http.MethodPost, "/v1/items/"+seg(id)+"/due-now", nil, nil, &res, routePlain)
	return res, err
}

// Forget deletes the item, whatever its state; a worker holding its lease
// loses it.
func (it *Items) Forget(ctx context.Context, id string) error {
	return it.c.call(ctx, http.MethodDelete, "/v1/items/"+seg(id), nil, nil, nil, routePlain)
}

// Stats returns the queue's counts by state and class, and its due
// histogram.
func (it *Items) Stats(ctx context.Context) (api.ItemsStats, error) {
	var res api.ItemsStats
	err := it.c.call(ctx, http.MethodGet, "/v1/items/stats", nil, nil, &res, routePlain)
	return res, err
}

// ListParams filter List; the zero value lists every item.
type ListParams struct {
	States    []string  // pending, scheduled, leased, done
	Class     string    // only items whose latest failure had this class
	DueBefore time.Time // only pending and scheduled items due before it
	Limit     int       // most items on the page; 0 is the daemon's default
	After     string    // the previous page's Next
}

// List returns one page of items in id order, without payloads. A page
// may be short, even empty, and still have a Next.
func (it *Items) List(ctx context.Context, p ListParams) (api.ItemPage, error) {
	q := url.Values{}
	if len(p.States) > 0 {
		q.Set("state", strings.Join(p.States, ","))
	}
	if p.Class != "" {
		q.Set("class", p.Class)
	}
	if !p.DueBefore.IsZero() {
		q.Set("due_before", p.DueBefore.UTC().Format(time.RFC3339Nano))
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.After != "" {
		q.Set("after", p.After)
	}
	var res api.ItemPage
	err := it.c.call(ctx, http.MethodGet, "/v1/items", q, nil, &res, routePlain)
	return res, err
}

// All yields every item p's filters match, page after page from p.After,
// and stops at the first error, which it yields.
func (it *Items) All(ctx context.Context, p ListParams) iter.Seq2[api.Item, error] {
	return pages(p.After, func(after string) ([]api.Item, string, error) {
		p.After = after
		page, err := it.List(ctx, p)
		return page.Items, page.Next, err
	})
}

// pages yields the entries of page after page, starting after a cursor:
// read returns a page's entries and the next page's cursor, "" on the
// last. It stops at the first error, which it yields.
func pages[T any](after string, read func(after string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			entries, next, err := read(after)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, e := range entries {
				if !yield(e, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			after = next
		}
	}
}
