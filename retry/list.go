package retry

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// Limits of List.
const (
	// DefaultListLimit is how many items a List page holds when
	// ListParams.Limit is zero.
	DefaultListLimit = 100
	// MaxListLimit is the most items one List page holds.
	MaxListLimit = 1000
	// listScan bounds the rows one List call walks in id order to fill a
	// page, so that a filter matching few of many items costs a bounded
	// time per call (a shorter page with a cursor) instead of a walk of
	// the whole table.
	listScan = 10_000
)

// ListParams selects the items List returns. Every zero field selects
// everything.
type ListParams struct {
	// States keeps items in one of these states; empty means every state.
	States []State
	// Class keeps items whose latest failure had this class; empty means
	// every class.
	Class string
	// DueBefore keeps pending and scheduled items next due before it
	// (leased and done items never match); zero means no bound.
	DueBefore time.Time
	// After is the Next cursor of the previous page; empty starts at the
	// beginning.
	After string
	// Limit is the most items on the page: zero means DefaultListLimit,
	// at most MaxListLimit.
	Limit int
}

// ListPage is one page of List.
type ListPage struct {
	// Items are in id order, without their payloads (Get has them).
	Items []Item `json:"items"`
	// Next is the cursor of the following page, empty on the last one. A
	// page may hold fewer than Limit items (even none) and still have a
	// Next: each call walks a bounded number of items.
	Next string `json:"next,omitempty"`
}

// List returns a page of items, filtered by p, in id order. Pages are cut
// by id (keyset paging), so items added or removed meanwhile never make a
// later page repeat or skip one that stayed. Bad parameters are an
// *InputError naming the field ("state", "class", "after", "limit").
func (s *Scheduler) List(ctx context.Context, p ListParams) (ListPage, error) {
	q, err := checkListParams(p)
	if err != nil {
		return ListPage{}, err
	}
	res, err := s.store.RetryList(ctx, q)
	if err != nil {
		return ListPage{}, err
	}
	page := ListPage{Items: make([]Item, 0, len(res.Records))}
	for i := range res.Records {
		it, err := itemFrom(&res.Records[i], nil)
		if err != nil {
			return ListPage{}, err
		}
		page.Items = append(page.Items, it)
	}
	switch {
	case res.More && len(page.Items) > 0:
		page.Next = encodeCursor(page.Items[len(page.Items)-1].ID)
	case res.Last != "":
		page.Next = encodeCursor(res.Last)
	}
	return page, nil
}

func checkListParams(p ListParams) (retrydriver.ListParams, error) {
	q := retrydriver.ListParams{Class: p.Class, Limit: p.Limit, Scan: listScan}
	seen := map[State]bool{}
	for _, st := range p.States {
		if !st.Valid() {
			return q, invalid("state", "unknown state %d (want pending, scheduled, leased or done)", int(st))
		}
		if !seen[st] {
			seen[st] = true
			q.States = append(q.States, retrydriver.State(st))
		}
	}
	if p.Class != "" {
		if err := checkClass(p.Class); err != nil {
			return q, err
		}
	}
	if !p.DueBefore.IsZero() {
		q.DueBefore = p.DueBefore.UTC().Truncate(time.Microsecond)
	}
	if p.After != "" {
		id, err := decodeCursor(p.After)
		if err != nil {
			return q, err
		}
		q.After = id
	}
	switch {
	case p.Limit == 0:
		q.Limit = DefaultListLimit
	case p.Limit < 0 || p.Limit > MaxListLimit:
		return q, invalid("limit", "is %d; want 1 to %d, or 0 for %d", p.Limit, MaxListLimit, DefaultListLimit)
	}
	return q, nil
}

// ParseStates reads a comma-separated list of state names ("pending,
// scheduled"), as the daemon's query and the command line take them. Its
// error is an *InputError with Field "state".
func ParseStates(s string) ([]State, error) {
	var out []State
	for name := range strings.SplitSeq(s, ",") {
		var st State
		if err := st.UnmarshalText([]byte(strings.TrimSpace(name))); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// Cursors are opaque to callers so that the order pages are cut by may
// change without breaking them; today they carry the last id.
const cursorPrefix = "i1."

func encodeCursor(id string) string {
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(id))
}

func decodeCursor(c string) (string, error) {
	raw, ok := strings.CutPrefix(c, cursorPrefix)
	if !ok {
		return "", invalid("after", "%.40q is not a cursor from a previous page", c)
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return "", invalid("after", "%.40q is not a cursor from a previous page", c)
	}
	if err := checkID(string(b)); err != nil {
		return "", invalid("after", "%.40q is not a cursor from a previous page", c)
	}
	return string(b), nil
}

// The bounds of the due histogram, after now.
var dueBounds = []struct {
	name string
	d    time.Duration
}{
	{"1h", time.Hour},
	{"1d", 24 * time.Hour},
	{"7d", 7 * 24 * time.Hour},
	{"30d", 30 * 24 * time.Hour},
}

// DueHistogram counts the items waiting for an attempt (pending and
// scheduled) by when they are next due.
type DueHistogram struct {
	// Buckets are, in order: due now, then due within 1h, 1d, 7d and 30d
	// (each past the bucket before), then later. Their counts add up to
	// Waiting.
	Buckets []DueBucket `json:"buckets"`
	// Waiting counts pending and scheduled items.
	Waiting int `json:"waiting"`
	// OldestDue is the earliest next due time of a waiting item (in the
	// past when something is due now); zero when none waits.
	OldestDue time.Time `json:"oldest_due,omitzero"`
}

// DueBucket is one bar of a DueHistogram.
type DueBucket struct {
	// Name is "now", "1h", "1d", "7d", "30d" or "later".
	Name string `json:"name"`
	// WithinSeconds is the bucket's upper bound from now: 0 for "now",
	// absent for "later".
	WithinSeconds *int64 `json:"within_seconds,omitempty"`
	Count         int    `json:"count"`
}

// Due counts the items waiting for an attempt by when they are next due:
// due now, within an hour, a day, a week, 30 days, and later. It reads
// the store's indexes of waiting items, in time proportional to the items
// due within 30 days; call it for monitoring, not per claim.
func (s *Scheduler) Due(ctx context.Context) (DueHistogram, error) {
	bounds := dueBoundsFrom(s.now())
	res, err := s.store.RetryDue(ctx, retrydriver.DueParams{Bounds: bounds})
	if err != nil {
		return DueHistogram{}, err
	}
	return dueHistogram(res, len(bounds))
}

// StatsAndDue returns Stats and Due as read from one snapshot of the
// store, so that what a report shows of both agrees: the histogram's
// "now" bucket is Stats.DueNow, and its buckets add up to the pending and
// scheduled counts of Stats.ByState. It costs what Due does.
func (s *Scheduler) StatsAndDue(ctx context.Context) (Stats, DueHistogram, error) {
	now := s.now()
	bounds := dueBoundsFrom(now)
	res, err := s.store.RetryStats(ctx, retrydriver.StatsParams{Now: now, DueBounds: bounds})
	if err != nil {
		return Stats{}, DueHistogram{}, err
	}
	if res.Due == nil {
		return Stats{}, DueHistogram{}, fmt.Errorf("retry: the store returned no due counts with the statistics")
	}
	h, err := dueHistogram(*res.Due, len(bounds))
	if err != nil {
		return Stats{}, DueHistogram{}, err
	}
	st := statsFrom(res, now)
	st.Schedule = s.Schedule()
	return st, h, nil
}

func dueBoundsFrom(now time.Time) []time.Time {
	bounds := []time.Time{now}
	for _, b := range dueBounds {
		bounds = append(bounds, now.Add(b.d))
	}
	return bounds
}

func dueHistogram(res retrydriver.DueResult, nbounds int) (DueHistogram, error) {
	if len(res.Counts) != nbounds+1 {
		return DueHistogram{}, fmt.Errorf("retry: the store returned %d due counts for %d bounds", len(res.Counts), nbounds)
	}
	h := DueHistogram{Buckets: make([]DueBucket, 0, len(res.Counts)), OldestDue: res.Oldest}
	zero := int64(0)
	h.Buckets = append(h.Buckets, DueBucket{Name: "now", WithinSeconds: &zero, Count: res.Counts[0]})
	for i, b := range dueBounds {
		sec := int64(b.d / time.Second)
		h.Buckets = append(h.Buckets, DueBucket{Name: b.name, WithinSeconds: &sec, Count: res.Counts[i+1]})
	}
	h.Buckets = append(h.Buckets, DueBucket{Name: "later", Count: res.Counts[len(res.Counts)-1]})
	for _, b := range h.Buckets {
		h.Waiting += b.Count
	}
	return h, nil
}
