package newznab_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/feed/newznab"
)

// fixtureKey is the account key the fixtures' links carry.
const fixtureKey = "SECRETKEY"

// fixtureNow is the client's clock in fixture tests: an hour before the
// "disabled till" time in the Prowlarr fixtures.
var fixtureNow = time.Date(2026, 12, 1, 19, 30, 0, 0, time.UTC)

// answer is what the fixture server sends for one kind of request.
type answer struct {
	file       string // under testdata; "" sends an empty body
	status     int    // 0 means 200
	retryAfter string
}

// fixtureServer answers caps and search requests from testdata files, as
// an indexer or a proxy in front of one would.
type fixtureServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	answers map[string]answer // by t
	count   map[string]int
}

func newFixtureServer(t *testing.T, answers map[string]answer) *fixtureServer {
	t.Helper()
	f := &fixtureServer{answers: answers, count: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := r.URL.Query().Get("t")
		f.mu.Lock()
		a, ok := f.answers[kind]
		f.count[kind]++
		f.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		var body []byte
		if a.file != "" {
			var err error
			if body, err = os.ReadFile(filepath.Join("testdata", a.file)); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		switch filepath.Ext(a.file) {
		case ".json":
			w.Header().Set("Content-Type", "application/json")
		case ".html":
			w.Header().Set("Content-Type", "text/html")
		default:
			w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
		}
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		w.WriteHeader(max(a.status, http.StatusOK))
		_, _ = w.Write(body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func fixtureClient(t *testing.T, f *fixtureServer, b newznab.Budget) *newznab.Client {
	t.Helper()
	return newClient(t, newznab.Config{
		URL: f.srv.URL + "/api", APIKey: fixtureKey, Name: "fixture", Budget: b,
		Now: func() time.Time { return fixtureNow },
	})
}

func TestFixtureSearches(t *testing.T) {
	t.Parallel()
	type want struct {
		ids       []string
		skipped   []string // reasons, in page order
		badDates  int
		conflicts []string // attribute names
		check     func(t *testing.T, p newznab.Page)
	}
	cases := []struct {
		file string
		want want
	}{
		{"search_newznab.xml", want{
			ids: []string{"9f8e7d6c5b4a", "0a1b2c3d4e5f"},
			check: func(t *testing.T, p newznab.Page) {
				a := p.Items[0]
				if a.Size != 2147483648 || a.Attrs["category"] != "5000,5040" || a.Attrs["grabs"] != "31" ||
					!a.Published.Equal(time.Date(2026, 12, 1, 18, 4, 5, 0, time.UTC)) {
					t.Errorf("first item %+v", a)
				}
				if p.Total != 1250 || !p.Limits.Present || p.Limits.APIMax != 1000 || p.Limits.APICurrent != 12 ||
					!p.Limits.APINextAvailable.Equal(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)) {
					t.Errorf("page total %d, limits %+v", p.Total, p.Limits)
				}
				// A guid that is not a URL is the id as it is; the download
				// link keeps the key, for the program that grabs it.
				if b := p.Items[1]; b.Size != 53687091200 || !strings.Contains(b.Attrs["link"], "r="+fixtureKey) {
					t.Errorf("second item %+v", b)
				}
			},
		}},
		{"search_torznab_dual.xml", want{
			ids:       []string{"https://tracker.example/view/611022", "https://tracker.example/view/611000"},
			conflicts: []string{"infohash", "size"},
			check: func(t *testing.T, p newznab.Page) {
				a, b := p.Items[0], p.Items[1]
				// The same values as newznab:attr and torznab:attr are one
				// value each, not "316477946,316477946".
				if a.Size != 316477946 || a.Attrs["size"] != "316477946" || a.Attrs["category"] != "5070,100001" || a.Attrs["seeders"] != "181" {
					t.Errorf("first item %+v", a)
				}
				if a.Attrs["infohash"] != "5d41402abc4b2a76b9719d911017c592aabbccdd" {
					t.Errorf("infohash %q; the first value sent is kept", a.Attrs["infohash"])
				}
				if b.Size != 316000001 || b.Attrs["category"] != "5070" {
					t.Errorf("second item %+v", b)
				}
				if c := p.Conflicts[1]; c.Index != 1 || c.Kept != "316000001" || c.Dropped != "316000009" {
					t.Errorf("size conflict %+v", c)
				}
			},
		}},
		{"search_guidless.xml", want{
			ids: []string{
				"http://127.0.0.1:9117/dl/tracker/?jackett_apikey=[key]&path=Q2ZESjhQ&file=Only.A.Link",
				"https://tracker.example/download.php?id=77&passkey=[key]",
				"https://tracker.example/rss/download/88/[key]/Guid.Is.A.Download.Link.torrent",
			},
			skipped: []string{newznab.SkipNoIdentity},
			check: func(t *testing.T, p newznab.Page) {
				if s := p.Skipped[0]; s.Index != 2 || s.Title != "Nothing.To.Go.By-GRP" {
					t.Errorf("skipped %+v", s)
				}
				if p.Items[1].Size != 1468006400 {
					t.Errorf("the enclosure's length is the size: %+v", p.Items[1])
				}
			},
		}},
		{"search_dates.xml", want{
			ids: []string{"wrong-weekday", "wrong-but-valid-weekday", "no-weekday", "no-zone", "named-zone", "gmt",
				"colon-offset", "no-seconds", "iso-z", "iso-offset", "iso-space", "rfc850", "ansi-c", "unreadable", "absent"},
			badDates: 1,
			check: func(t *testing.T, p newznab.Page) {
				want := time.Date(2017, 4, 3, 7, 25, 35, 0, time.UTC)
				for _, it := range p.Items {
					w := want
					switch it.ID {
					case "no-seconds":
						w = want.Truncate(time.Minute)
					case "iso-offset":
						w = want.Add(250 * time.Millisecond)
					case "unreadable", "absent":
						w = time.Time{}
					}
					if !it.Published.Equal(w) || it.Published.Location() != time.UTC {
						t.Errorf("%s: published %v; want %v", it.ID, it.Published, w)
					}
				}
			},
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			f := newFixtureServer(t, map[string]answer{"search": {file: c.file}, "caps": {file: "caps_plain.xml"}})
			cl := fixtureClient(t, f, nil)
			p, err := cl.Search(ctx(t), newznab.SearchParams{})
			if err != nil {
				t.Fatal(err)
			}
			var ids, skipped, conflicts []string
			for _, it := range p.Items {
				ids = append(ids, it.ID)
				if strings.Contains(it.ID, fixtureKey) {
					t.Errorf("id %q carries the key", it.ID)
				}
			}
			for _, s := range p.Skipped {
				skipped = append(skipped, s.Reason)
			}
			for _, c := range p.Conflicts {
				conflicts = append(conflicts, c.Name)
			}
			if fmt.Sprint(ids) != fmt.Sprint(c.want.ids) {
				t.Errorf("ids\n got %q\nwant %q", ids, c.want.ids)
			}
			if fmt.Sprint(skipped) != fmt.Sprint(c.want.skipped) || p.BadDates != c.want.badDates || fmt.Sprint(conflicts) != fmt.Sprint(c.want.conflicts) {
				t.Errorf("skipped %q, bad dates %d, conflicts %q; want %q, %d, %q", skipped, p.BadDates, conflicts, c.want.skipped, c.want.badDates, c.want.conflicts)
			}
			if c.want.check != nil && !t.Failed() {
				c.want.check(t, p)
			}

			// Page serves the same items, with a placeholder where an item
			// was skipped, so that a Syncer counts offsets right.
			items, err := cl.Page(ctx(t), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(p.Items)+len(p.Skipped) {
				t.Fatalf("Page gave %d items; the page holds %d", len(items), len(p.Items)+len(p.Skipped))
			}
			for _, s := range p.Skipped {
				if it := items[s.Index]; it.ID != "" || it.Skip != s.Reason || it.Attrs != nil {
					t.Errorf("placeholder at %d: %+v", s.Index, it)
				}
			}
		})
	}
}

func TestFixtureCaps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file            string
		max, def        int
		limits, reports bool
		cats            int
	}{
		{"caps_limits.xml", 100, 50, true, true, 2},
		{"caps_plain.xml", 0, 0, false, false, 1},
	} {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			f := newFixtureServer(t, map[string]answer{"caps": {file: c.file}, "search": {file: "search_newznab.xml"}})
			b := &budgetRecorder{}
			cl := fixtureClient(t, f, b)
			caps, err := cl.Caps(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if caps.MaxLimit != c.max || caps.DefaultLimit != c.def || caps.Limits.Present != c.limits || len(caps.Categories) != c.cats || !caps.Search {
				t.Fatalf("caps %+v", caps)
			}
			if reported, _ := b.calls(); (len(reported) == 1) != c.reports {
				t.Fatalf("reported limits %v", reported)
			}
		})
	}
}

// TestFixtureErrors sends each error shape through Caps, Search and Page.
func TestFixtureErrors(t *testing.T) {
	t.Parallel()
	hour := fixtureNow.Add(time.Hour)
	cases := []struct {
		name      string
		answer    answer
		want      error
		code      int // of the *Error; 0 for a *StatusError
		until     time.Time
		exhausted bool // matches feed.ErrSourceExhausted, and the budget hears it until `until` (zero: the day's end)
	}{
		{"prowlarr query limit", answer{file: "error_prowlarr_query_limit.xml", status: 429, retryAfter: "3600"},
			newznab.ErrAPILimit, 429, hour, true},
		{"prowlarr grab limit", answer{file: "error_prowlarr_grab_limit.xml", status: 429, retryAfter: "7200"},
			newznab.ErrDownloadLimit, 429, fixtureNow.Add(2 * time.Hour), false},
		{"prowlarr disabled till, with Retry-After", answer{file: "error_prowlarr_disabled_till.xml", status: 429, retryAfter: "1800"},
			newznab.ErrDisabled, 429, fixtureNow.Add(30 * time.Minute), true},
		{"prowlarr disabled till, description only", answer{file: "error_prowlarr_disabled_till.xml", status: 429},
			newznab.ErrDisabled, 429, time.Date(2026, 12, 1, 20, 30, 0, 0, time.UTC), true},
		{"prowlarr disabled", answer{file: "error_prowlarr_disabled.xml", status: 410},
			newznab.ErrDisabled, 410, time.Time{}, false},
		{"request limit", answer{file: "error_request_limit.xml"},
			newznab.ErrAPILimit, 500, time.Time{}, true},
		{"request limit, HTTP date", answer{file: "error_request_limit.xml", status: 503, retryAfter: "Tue, 01 Dec 2026 20:30:00 GMT"},
			newznab.ErrAPILimit, 500, hour, true},
		{"credentials", answer{file: "error_credentials.xml"}, newznab.ErrBadCredentials, 100, time.Time{}, false},
		{"api disabled", answer{file: "error_api_disabled.xml"}, newznab.ErrDisabled, 910, time.Time{}, false},
		{"bad parameter", answer{file: "error_parameter.xml", status: 400}, newznab.ErrRequest, 201, time.Time{}, false},
		{"download limit", answer{file: "error_download_limit.xml"}, newznab.ErrDownloadLimit, 501, time.Time{}, false},
		{"nzbhydra2 json", answer{file: "error_hydra.json"}, newznab.ErrBadCredentials, 100, time.Time{}, false},
		{"newznab json", answer{file: "error_newznab.json"}, newznab.ErrAPILimit, 500, time.Time{}, true},
		{"nested json, disabled till", answer{file: "error_nested.json", status: 429},
			newznab.ErrDisabled, 429, time.Date(2026, 12, 1, 20, 30, 0, 0, time.UTC), true},
		{"json message", answer{file: "error_string.json", status: 429, retryAfter: "60"},
			newznab.ErrAPILimit, 0, fixtureNow.Add(time.Minute), true},
		{"past Retry-After is ignored", answer{file: "error_prowlarr_query_limit.xml", status: 429, retryAfter: "Tue, 01 Dec 2026 10:00:00 GMT"},
			newznab.ErrAPILimit, 429, time.Time{}, true},
		{"maintenance page", answer{file: "maintenance.html", status: 503, retryAfter: "120"},
			nil, 0, fixtureNow.Add(2 * time.Minute), false},
		{"bare 429", answer{status: 429, retryAfter: "30"}, nil, 0, fixtureNow.Add(30 * time.Second), true},
		{"bare 429 without Retry-After", answer{status: 429}, nil, 0, time.Time{}, false},
	}
	calls := []struct {
		name string
		do   func(context.Context, *newznab.Client) error
	}{
		{"caps", func(ctx context.Context, c *newznab.Client) error { _, err := c.Caps(ctx); return err }},
		{"search", func(ctx context.Context, c *newznab.Client) error {
			_, err := c.Search(ctx, newznab.SearchParams{})
			return err
		}},
		{"page", func(ctx context.Context, c *newznab.Client) error { _, err := c.Page(ctx, 0); return err }},
	}
	for _, c := range cases {
		for _, call := range calls {
			t.Run(c.name+"/"+call.name, func(t *testing.T) {
				t.Parallel()
				answers := map[string]answer{"search": c.answer, "caps": c.answer}
				if call.name == "page" {
					answers["caps"] = answer{file: "caps_limits.xml"}
				}
				f := newFixtureServer(t, answers)
				b := &budgetRecorder{}
				err := call.do(ctx(t), fixtureClient(t, f, b))
				if err == nil {
					t.Fatal("no error")
				}
				if c.want != nil && !errors.Is(err, c.want) {
					t.Errorf("err = %v; want %v", err, c.want)
				}
				if errors.Is(err, feed.ErrSourceExhausted) != c.exhausted {
					t.Errorf("matches feed.ErrSourceExhausted = %v; want %v (%v)", !c.exhausted, c.exhausted, err)
				}
				var at feed.RetryAter
				if !errors.As(err, &at) || !at.RetryAt().Equal(c.until) {
					t.Errorf("retry at %v; want %v (%v)", at, c.until, err)
				}
				var ie *newznab.Error
				var se *newznab.StatusError
				switch {
				case c.code != 0:
					if !errors.As(err, &ie) || ie.Code != c.code || ie.Status != max(c.answer.status, 200) || !ie.Until.Equal(c.until) {
						t.Errorf("error document %+v; want code %d, status %d (%v)", ie, c.code, c.answer.status, err)
					}
				case c.want == nil:
					if !errors.As(err, &se) || se.Status != c.answer.status {
						t.Errorf("status error %+v; want status %d (%v)", se, c.answer.status, err)
					}
				}
				if _, exhausted := b.calls(); (len(exhausted) == 1) != c.exhausted {
					t.Errorf("budget marked exhausted %d times; want it %v", len(exhausted), c.exhausted)
				} else if u := b.untilsSent(); c.exhausted && !u[0].Equal(c.until) {
					t.Errorf("budget marked exhausted until %v; want %v", u[0], c.until)
				}
				if strings.Contains(err.Error(), fixtureKey) || !strings.HasPrefix(err.Error(), "newznab: ") {
					t.Errorf("error text %q", err)
				}
			})
		}
	}
}
