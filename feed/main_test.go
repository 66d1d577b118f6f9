package feed_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/internal/clocktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClock returns a fake clock at 10:00 UTC.
func newClock() *clocktest.Clock { return clocktest.New(time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)) }

func newSyncer(t *testing.T, st feed.Store, cfg feed.Config) *feed.Syncer {
	t.Helper()
	s, err := feed.NewSyncer(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// listSource is an in-memory newest-first feed with fixed-size pages. It
// logs the offsets asked for and can fail chosen requests.
type listSource struct {
	mu       sync.Mutex
	items    []feed.Item // oldest first
	seq      int
	pageSize int
	offsets  []int
	failAt   map[int]error // by request number (1-based)
	onPage   func(offset int)
	at       time.Time
	// coarse gives every item of one publish call the same time, as
	// indexers do for a burst within one second.
	coarse bool
}

func newList(pageSize int) *listSource {
	return &listSource{pageSize: pageSize, failAt: map[int]error{}, at: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)}
}

// publish adds n items, each a second newer than the last; it returns their
// ids oldest first.
func (l *listSource) publish(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, n)
	if l.coarse {
		l.at = l.at.Add(time.Second)
	}
	for i := range ids {
		l.seq++
		if !l.coarse {
			l.at = l.at.Add(time.Second)
		}
		ids[i] = fmt.Sprintf("i%05d", l.seq)
		l.items = append(l.items, feed.Item{ID: ids[i], Published: l.at, Title: "item " + ids[i]})
	}
	return ids
}

// publishUnidentified adds n items the source cannot identify: placeholders
// with an empty id, as a Source returns them.
func (l *listSource) publishUnidentified(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		l.seq++
		l.at = l.at.Add(time.Second)
		l.items = append(l.items, feed.Item{Published: l.at, Title: fmt.Sprintf("unidentified %05d", l.seq), Skip: "no id here"})
	}
}

func (l *listSource) remove(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = slices.DeleteFunc(l.items, func(it feed.Item) bool { return it.ID == id })
}

func (l *listSource) failRequest(n int, err error) {
	l.mu.Lock()
	l.failAt[n] = err
	l.mu.Unlock()
}

func (l *listSource) requests() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.offsets)
}

func (l *listSource) Page(_ context.Context, offset int) ([]feed.Item, error) {
	l.mu.Lock()
	l.offsets = append(l.offsets, offset)
	n := len(l.offsets)
	err := l.failAt[n]
	hook := l.onPage
	var out []feed.Item
	for i := len(l.items) - 1 - offset; i >= 0 && len(out) < l.pageSize; i-- {
		out = append(out, l.items[i])
	}
	l.mu.Unlock()
	if hook != nil {
		hook(offset)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

var errPageDown = errors.New("page request failed")

// tally collects the ids a test was handed, and complains about repeats.
type tally struct {
	t    *testing.T
	seen map[string]int
}

func newTally(t *testing.T) *tally { return &tally{t: t, seen: map[string]int{}} }

func (c *tally) add(items []feed.Item) {
	c.t.Helper()
	for i, it := range items {
		c.seen[it.ID]++
		if c.seen[it.ID] > 1 {
			c.t.Fatalf("item %s handed out twice", it.ID)
		}
		if i > 0 && it.Published.After(items[i-1].Published) {
			c.t.Fatalf("items not newest first: %s after %s", it.ID, items[i-1].ID)
		}
	}
}

// missing returns the ids in want that were never handed out.
func (c *tally) missing(want []string) []string {
	var out []string
	for _, id := range want {
		if c.seen[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
