package newznab_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/feed/newznab"
	"github.com/hostguard/hostguard/internal/fakeindexer"
	"github.com/hostguard/hostguard/internal/sqlitetest"
	"github.com/hostguard/hostguard/transport"
)

// TestRequestsAreAdmittedByTheTransport sends caps and searches through a
// transport with a budget: caps and Search are admitted as searches, a
// refusal does no network work, and Page's own requests (which a Syncer
// admits) are not charged again.
func TestRequestsAreAdmittedByTheTransport(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{APIKey: key})
	defer x.Close()
	x.Publish(30, t0)
	b, err := budget.New(sqlitetest.Open(t), budget.Config{Sources: []budget.Source{{Name: "fake", Pace: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := transport.New(transport.Config{Base: base, Budget: b, HeaderTimeout: 10 * time.Second})
	defer tr.Close()
	c := newClient(t, newznab.Config{URL: x.URL(), APIKey: key, Name: "fake", PageSize: 10, HTTPClient: &http.Client{Transport: tr}})
	used := func() int64 {
		t.Helper()
		r, err := b.Report(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range r.Sources {
			if s.Name == "fake" {
				return s.Used
			}
		}
		return -1
	}

	if err := b.Pause(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Caps(ctx(t)); !errors.Is(err, budget.ErrPaused) {
		t.Fatalf("caps while paused: %v; want the budget's refusal", err)
	}
	if _, err := c.Search(ctx(t), newznab.SearchParams{}); !errors.Is(err, budget.ErrPaused) {
		t.Fatalf("search while paused: %v", err)
	}
	if n := len(x.Requests()); n != 0 {
		t.Fatalf("the indexer got %d requests while the budget refused them", n)
	}
	// Page's own request is the Syncer's to admit; without caps it uses
	// the configured page size, and asks for caps again next time.
	items, err := c.Page(ctx(t), 0)
	if err != nil || len(items) != 10 {
		t.Fatalf("page while caps is refused: %d items, %v", len(items), err)
	}
	if err := b.Pause(ctx(t), false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Page(ctx(t), 10); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Search(ctx(t), newznab.SearchParams{Query: "Show"}); err != nil {
		t.Fatal(err)
	}
	if x.Count("caps") != 1 || x.Count("search") != 3 {
		t.Fatalf("the indexer got %d caps and %d searches; want 1 and 3", x.Count("caps"), x.Count("search"))
	}
	if n := used(); n != 2 {
		t.Fatalf("the source was charged %d; want 2 (caps and Search, not the pages)", n)
	}
}
