package newznab_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/feed/newznab"
	"github.com/hostguard/hostguard/internal/fakeindexer"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/transport"
)

const key = "k3y-s3cr3t-0123456789"

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func TestCaps(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{APIKey: key, MaxLimit: 60, DefaultLimit: 25, APIMax: 400, ReportLimits: true})
	defer x.Close()
	b := &budgetRecorder{}
	c := newClient(t, newznab.Config{URL: x.URL(), APIKey: key, Name: "fake", Budget: b})
	caps, err := c.Caps(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if caps.MaxLimit != 60 || caps.DefaultLimit != 25 || !caps.Search || caps.Title != "fakeindexer" {
		t.Fatalf("caps = %+v", caps)
	}
	if len(caps.Categories) != 2 || caps.Categories[1].ID != 5000 || len(caps.Categories[1].Subcats) != 2 || caps.Categories[1].Subcats[0].ID != 5040 {
		t.Fatalf("categories = %+v", caps.Categories)
	}
	if !caps.Limits.Present || caps.Limits.APIMax != 400 {
		t.Fatalf("limits = %+v", caps.Limits)
	}
	if reported, _ := b.calls(); fmt.Sprint(reported) != "[400]" {
		t.Fatalf("reported limits = %v; want [400]", reported)
	}
}

func TestSearchParsesItems(t *testing.T) {
	t.Parallel()
	for _, torznab := range []bool{false, true} {
		t.Run(fmt.Sprint("torznab=", torznab), func(t *testing.T) {
			t.Parallel()
			x := fakeindexer.New(fakeindexer.Options{APIKey: key, Torznab: torznab})
			defer x.Close()
			rels := x.Publish(3, t0)
			c := newClient(t, newznab.Config{URL: x.URL(), APIKey: key})
			p, err := c.Search(ctx(t), newznab.SearchParams{Offset: 1, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if p.Offset != 1 || p.Total != 3 || len(p.Items) != 2 {
				t.Fatalf("page offset %d total %d with %d items", p.Offset, p.Total, len(p.Items))
			}
			it, want := p.Items[0], rels[1] // offset 1 skips the newest
			if it.ID != want.GUID || it.Title != want.Title || it.Size != want.Size || !it.Published.Equal(want.Published) {
				t.Fatalf("item = %+v; want %+v", it, want)
			}
			if it.Attrs["category"] != "5000,5040" || it.Attrs["grabs"] != "7" || !strings.Contains(it.Attrs["link"], "/getnzb/"+want.GUID) {
				t.Fatalf("attrs = %v", it.Attrs)
			}
			if torznab && it.Attrs["seeders"] != "12" {
				t.Fatalf("torznab attrs = %v", it.Attrs)
			}
			reqs := x.Requests()
			last := reqs[len(reqs)-1]
			if last.T != "search" || last.Query != "" || last.Offset != 1 || last.Limit != 10 || last.APIKey != key {
				t.Fatalf("request = %+v", last)
			}
		})
	}
}

func TestPageRespectsCapsMaximum(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{MaxLimit: 40})
	defer x.Close()
	x.Publish(100, t0)
	c := newClient(t, newznab.Config{URL: x.URL(), PageSize: 500})
	var src feed.Source = c
	for _, off := range []int{0, 40, 80} {
		items, err := src.Page(ctx(t), off)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(40, 100-off); len(items) != want {
			t.Fatalf("page at %d: %d items, want %d", off, len(items), want)
		}
	}
	if n := x.Count("caps"); n != 1 {
		t.Fatalf("caps read %d times, want once", n)
	}
	for _, r := range x.Requests() {
		if r.T == "search" && r.Limit != 40 {
			t.Fatalf("search asked for limit %d; the caps maximum is 40", r.Limit)
		}
	}
}

func TestPageWithoutCaps(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{MaxLimit: 100})
	defer x.Close()
	x.Publish(30, t0)
	x.FailCaps(fakeindexer.Fault{Code: 203, Description: "Function not available"})
	c := newClient(t, newznab.Config{URL: x.URL(), PageSize: 20})
	for range 2 {
		items, err := c.Page(ctx(t), 0)
		if err != nil || len(items) != 20 {
			t.Fatalf("page without caps: %d items, %v", len(items), err)
		}
	}
	if n := x.Count("caps"); n != 1 {
		t.Fatalf("caps asked %d times; an indexer without caps is asked once", n)
	}
}

func TestErrorDocuments(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code   int
		desc   string
		want   error
		source bool // matches feed.ErrSourceExhausted
	}{
		{100, "Incorrect user credentials", newznab.ErrBadCredentials, false},
		{101, "Account suspended", newznab.ErrBadCredentials, false},
		{102, "Insufficient privileges/not authorized", newznab.ErrBadCredentials, false},
		{500, "Request limit reached", newznab.ErrAPILimit, true},
		{429, "Request limit reached", newznab.ErrAPILimit, true},
		{501, "Download limit reached", newznab.ErrDownloadLimit, false},
		{910, "API Disabled", newznab.ErrDisabled, false},
		{201, "Incorrect parameter", newznab.ErrRequest, false},
		{203, "Function not available", newznab.ErrRequest, false},
		{900, "Unknown error", newznab.ErrUnknown, false},
	}
	x := fakeindexer.New(fakeindexer.Options{APIKey: key})
	defer x.Close()
	x.Publish(5, t0)
	for _, c := range cases {
		b := &budgetRecorder{}
		cl := newClient(t, newznab.Config{URL: x.URL(), APIKey: key, Name: "fake", Budget: b})
		x.Fail(fakeindexer.Fault{Offset: -1, Code: c.code, Description: c.desc + " for " + key})
		_, err := cl.Search(ctx(t), newznab.SearchParams{})
		var ie *newznab.Error
		if !errors.Is(err, c.want) || !errors.As(err, &ie) || ie.Code != c.code {
			t.Errorf("code %d: %v; want %v", c.code, err, c.want)
			continue
		}
		if errors.Is(err, feed.ErrSourceExhausted) != c.source {
			t.Errorf("code %d: matches feed.ErrSourceExhausted = %v", c.code, !c.source)
		}
		if strings.Contains(err.Error(), key) || strings.Contains(ie.Description, key) {
			t.Errorf("code %d: the key leaks: %v", c.code, err)
		}
		if !strings.HasPrefix(err.Error(), "newznab: ") {
			t.Errorf("code %d: %q lacks the package prefix", c.code, err)
		}
		if _, exhausted := b.calls(); (len(exhausted) == 1) != c.source {
			t.Errorf("code %d: budget marked exhausted %v times", c.code, len(exhausted))
		}
	}
}

func TestWrongKeyEchoIsMasked(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{APIKey: "the-right-one"})
	defer x.Close()
	c := newClient(t, newznab.Config{URL: x.URL() + "?apikey=" + key})
	_, err := c.Search(ctx(t), newznab.SearchParams{})
	if !errors.Is(err, newznab.ErrBadCredentials) {
		t.Fatalf("err = %v; want bad credentials", err)
	}
	if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[key]") {
		t.Fatalf("the echoed key is not masked: %v", err)
	}
}

func TestHTTPStatusWithoutErrorDocument(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{})
	defer x.Close()
	x.Fail(fakeindexer.Fault{Offset: -1, Status: http.StatusServiceUnavailable})
	c := newClient(t, newznab.Config{URL: x.URL(), APIKey: key})
	_, err := c.Search(ctx(t), newznab.SearchParams{})
	var se *newznab.StatusError
	if !errors.As(err, &se) || se.Status != 503 {
		t.Fatalf("err = %v; want a StatusError 503", err)
	}
}

// TestNetworkErrorsDoNotCarryTheKey goes through the guarded transport: the
// connection failure, and then the guard's fast refusal, must name the
// indexer without its key.
func TestNetworkErrorsDoNotCarryTheKey(t *testing.T) {
	t.Parallel()
	h := faulthost.ClosedPort()
	defer h.Close()
	var logs bytes.Buffer
	tr := transport.New(transport.Config{
		HeaderTimeout: 500 * time.Millisecond,
		Logger:        slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	defer tr.CloseIdleConnections()
	c := newClient(t, newznab.Config{URL: h.URL() + "/api", APIKey: key, HTTPClient: &http.Client{Transport: tr}})
	for i := range 3 {
		_, err := c.Page(ctx(t), 0)
		if err == nil {
			t.Fatal("want an error from a closed port")
		}
		if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "apikey") {
			t.Fatalf("attempt %d: error carries the key: %v", i, err)
		}
		if !strings.Contains(err.Error(), h.Addr()) {
			t.Fatalf("attempt %d: error does not name the indexer: %v", i, err)
		}
	}
	// The breaker keys the indexer by origin, and its log lines say no more.
	eps := tr.Guard().Endpoints()
	if len(eps) != 1 || eps[0].Endpoint != h.URL() {
		t.Fatalf("guard endpoints %+v; want just %s", eps, h.URL())
	}
	if !strings.Contains(logs.String(), h.Addr()) || strings.Contains(logs.String(), key) || strings.Contains(logs.String(), "apikey") {
		t.Fatalf("transport log (should name the origin, never the key):\n%s", logs.String())
	}
}

func TestSearchReportsLimitsAndExhaustion(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{APIMax: 3, ReportLimits: true})
	defer x.Close()
	x.Publish(5, t0)
	b := &budgetRecorder{}
	c := newClient(t, newznab.Config{URL: x.URL(), Name: "fake", Budget: b})
	for i := range 3 {
		if _, err := c.Search(ctx(t), newznab.SearchParams{}); err != nil {
			t.Fatalf("search %d: %v", i, err)
		}
	}
	reported, exhausted := b.calls()
	// The limit is reported once (it did not change); the third search used
	// the last request, which the indexer says in its apilimits.
	if fmt.Sprint(reported) != "[3]" || fmt.Sprint(exhausted) != "[fake]" {
		t.Fatalf("reported %v, exhausted %v", reported, exhausted)
	}
	_, err := c.Search(ctx(t), newznab.SearchParams{})
	if !errors.Is(err, newznab.ErrAPILimit) {
		t.Fatalf("fourth search: %v; want the API limit", err)
	}
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg   newznab.Config
		field string
		want  string
	}{
		{newznab.Config{}, "url", "is empty"},
		{newznab.Config{URL: "ftp://x/api"}, "url", "not an http or https URL"},
		{newznab.Config{URL: "http:///api?apikey=" + key}, "url", "not an http or https URL"},
		{newznab.Config{URL: "http://u:" + key + "@x/api"}, "url", "user:password"},
		{newznab.Config{URL: "http://x/api?apikey=" + key, APIKey: "other"}, "url", "different from api_key"},
		{newznab.Config{URL: "http://x/api", MaxResponseBytes: -1}, "max_response_bytes", "is -1"},
		{newznab.Config{URL: "http://x/api", Categories: []int{5000, -2}}, "categories[1]", "is -2"},
	}
	for _, c := range cases {
		_, err := newznab.New(c.cfg)
		var ie *newznab.InputError
		if !errors.As(err, &ie) || !errors.Is(err, newznab.ErrInvalid) || ie.Field != c.field || !strings.Contains(ie.Reason, c.want) ||
			err.Error() != "newznab: "+c.field+": "+ie.Reason || strings.Contains(err.Error(), key) {
			t.Errorf("New(%q) = %v; want an InputError on %s mentioning %q, without the key", c.cfg.URL, err, c.field, c.want)
		}
	}
	c := newClient(t, newznab.Config{URL: "http://127.0.0.1:1/api"})
	for _, p := range []struct {
		params newznab.SearchParams
		field  string
	}{
		{newznab.SearchParams{Offset: -1}, "offset"},
		{newznab.SearchParams{Limit: -1}, "limit"},
		{newznab.SearchParams{Categories: []int{-1}}, "categories[0]"},
	} {
		var ie *newznab.InputError
		if _, err := c.Search(ctx(t), p.params); !errors.As(err, &ie) || ie.Field != p.field {
			t.Errorf("Search(%+v) = %v; want an InputError on %s", p.params, err, p.field)
		}
	}
}

// TestNegativePageSizeSendsNoLimit checks the documented "off": the
// indexer's own default page size.
func TestNegativePageSizeSendsNoLimit(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{DefaultLimit: 7})
	defer x.Close()
	x.Publish(20, t0)
	c := newClient(t, newznab.Config{URL: x.URL(), PageSize: -1})
	items, err := c.Page(ctx(t), 0)
	if err != nil || len(items) != 7 {
		t.Fatalf("page: %d items, %v; want the indexer's 7", len(items), err)
	}
	for _, r := range x.Requests() {
		if r.T == "search" && r.Limit != 0 {
			t.Fatalf("search sent limit %d", r.Limit)
		}
	}
}
