// Package fakeindexer is a Newznab/Torznab indexer for tests: an httptest
// server on 127.0.0.1 that serves a growing list of releases as real
// Newznab RSS, with paging, caps, API limits and error documents, and that
// counts every request it gets.
package fakeindexer

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Release is one release the indexer lists.
type Release struct {
	GUID      string
	Title     string
	Size      int64
	Published time.Time
	Category  int
	// Unidentified releases are listed without a guid, a link or an
	// enclosure, as broken feeds send some: a client cannot tell them
	// apart.
	Unidentified bool
}

// Options configures an Indexer. Zero fields take the defaults noted.
type Options struct {
	// APIKey is the key every API request but caps must carry. Default:
	// none required.
	APIKey string
	// MaxLimit and DefaultLimit are the page sizes caps reports and
	// searches obey. Defaults 100 and 50.
	MaxLimit, DefaultLimit int
	// Torznab makes the indexer speak Torznab (torznab:attr, torrent
	// enclosures) instead of Newznab.
	Torznab bool
	// APIMax is the account's daily request limit; searches beyond it get
	// error 500. Default: unlimited.
	APIMax int
	// ReportLimits adds newznab:apilimits to caps and search responses.
	ReportLimits bool
	// KeyInGUID writes the request's API key into each item's guid, as
	// some Torznab proxies do, and leaves out the guid attribute, so that
	// a client takes the guid element, key and all, for the item's id.
	KeyInGUID bool
}

// Fault is a canned failure for one upcoming search request.
type Fault struct {
	// Offset selects the request by its offset; -1 matches any.
	Offset int
	// Status, when not zero, answers with this HTTP status: with a plain
	// body, or with the error document when Code is set too (as Prowlarr
	// sends its 429s and 410s).
	Status int
	// Code and Description, when Code is not zero, answer with a Newznab
	// error document (under HTTP 200 unless Status says otherwise).
	Code        int
	Description string
	// RetryAfter, when not empty, is sent as the Retry-After header.
	RetryAfter string
}

// Request is one request the indexer received.
type Request struct {
	T      string // the t parameter
	Offset int
	Limit  int
	Query  string
	APIKey string
}

// Indexer is a running fake indexer. Its methods are safe for concurrent
// use.
type Indexer struct {
	srv  *httptest.Server
	opts Options

	mu       sync.Mutex
	releases []Release // oldest first
	seq      int
	faults   []Fault
	capsFail *Fault
	requests []Request
	apiUsed  int
}

// New starts an indexer on 127.0.0.1. Close it when done.
func New(opts Options) *Indexer {
	if opts.MaxLimit == 0 {
		opts.MaxLimit = 100
	}
	if opts.DefaultLimit == 0 {
		opts.DefaultLimit = 50
	}
	x := &Indexer{opts: opts}
	x.srv = httptest.NewServer(http.HandlerFunc(x.serve))
	return x
}

// Close stops the server.
func (x *Indexer) Close() { x.srv.Close() }

// URL is the API endpoint, ".../api".
func (x *Indexer) URL() string { return x.srv.URL + "/api" }

// Publish adds n releases, all published at at (the newest listed first,
// in the order added), and returns them oldest first.
func (x *Indexer) Publish(n int, at time.Time) []Release {
	return x.PublishEvery(n, at, 0)
}

// PublishEvery adds n releases, the first published at first and each of
// the others every after the one before, and returns them oldest first.
func (x *Indexer) PublishEvery(n int, first time.Time, every time.Duration) []Release {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]Release, n)
	for i := range out {
		x.seq++
		out[i] = Release{
			GUID:      fmt.Sprintf("rel%06d", x.seq),
			Title:     fmt.Sprintf("Some.Show.S01E%02d.1080p.WEB-GRP%d", x.seq%100, x.seq),
			Size:      int64(1<<30 + x.seq),
			Published: first.Add(time.Duration(i) * every).UTC().Truncate(time.Second),
			Category:  5040,
		}
	}
	x.releases = append(x.releases, out...)
	return out
}

// PublishUnidentified adds n releases without any identity (see
// Release.Unidentified), published at at.
func (x *Indexer) PublishUnidentified(n int, at time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for range n {
		x.seq++
		x.releases = append(x.releases, Release{
			Title: fmt.Sprintf("Unidentified.Release.%d", x.seq), Size: int64(1<<20 + x.seq),
			Published: at.UTC().Truncate(time.Second), Category: 5040, Unidentified: true,
		})
	}
}

// Remove takes a release down, as indexers do after a takedown notice.
func (x *Indexer) Remove(guid string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, r := range x.releases {
		if r.GUID == guid {
			x.releases = slices.Delete(x.releases, i, i+1)
			return true
		}
	}
	return false
}

// Len is how many releases are listed.
func (x *Indexer) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.releases)
}

// Fail queues f for the next matching search request.
func (x *Indexer) Fail(f Fault) {
	x.mu.Lock()
	x.faults = append(x.faults, f)
	x.mu.Unlock()
}

// FailCaps makes every caps request fail with f (Offset is ignored).
func (x *Indexer) FailCaps(f Fault) {
	x.mu.Lock()
	x.capsFail = &f
	x.mu.Unlock()
}

// Requests returns every request received so far.
func (x *Indexer) Requests() []Request {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.requests)
}

// Count returns how many requests had t=kind ("search", "caps").
func (x *Indexer) Count(kind string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, r := range x.requests {
		if r.T == kind {
			n++
		}
	}
	return n
}

// ResetAPIUsage starts the account's next day.
func (x *Indexer) ResetAPIUsage() {
	x.mu.Lock()
	x.apiUsed = 0
	x.mu.Unlock()
}

func (x *Indexer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	req := Request{T: q.Get("t"), Query: q.Get("q"), APIKey: q.Get("apikey")}
	req.Offset, _ = strconv.Atoi(q.Get("offset"))
	req.Limit, _ = strconv.Atoi(q.Get("limit"))

	x.mu.Lock()
	defer x.mu.Unlock()
	x.requests = append(x.requests, req)
	w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
	switch req.T {
	case "caps":
		if f := x.capsFail; f != nil {
			writeFault(w, *f)
			return
		}
		x.writeCaps(w)
		return
	case "search":
	default:
		writeError(w, 202, "No such function")
		return
	}
	if x.opts.APIKey != "" && req.APIKey != x.opts.APIKey {
		if req.APIKey == "" {
			writeError(w, 200, "Missing parameter (apikey)")
		} else {
			// Real indexers sometimes echo what they got; the client must
			// not pass that on.
			writeError(w, 100, "Incorrect user credentials: "+req.APIKey)
		}
		return
	}
	for i, f := range x.faults {
		if f.Offset == -1 || f.Offset == req.Offset {
			x.faults = slices.Delete(x.faults, i, i+1)
			writeFault(w, f)
			return
		}
	}
	if x.opts.APIMax > 0 && x.apiUsed >= x.opts.APIMax {
		writeError(w, 500, "Request limit reached")
		return
	}
	x.apiUsed++
	limit := req.Limit
	if limit <= 0 {
		limit = x.opts.DefaultLimit
	}
	limit = min(limit, x.opts.MaxLimit)
	x.writeSearch(w, req, limit)
}

func writeFault(w http.ResponseWriter, f Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	switch {
	case f.Status != 0 && f.Code == 0:
		http.Error(w, "injected failure", f.Status)
	case f.Status != 0:
		w.WriteHeader(f.Status)
		writeError(w, f.Code, f.Description)
	default:
		writeError(w, f.Code, f.Description)
	}
}

func writeError(w http.ResponseWriter, code int, desc string) {
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<error code="%d" description="%s"/>`+"\n", code, esc(desc))
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (x *Indexer) limitsElem(prefix string) string {
	if !x.opts.ReportLimits || x.opts.APIMax == 0 {
		return ""
	}
	return fmt.Sprintf(`<%sapilimits apiCurrent="%d" apiMax="%d" grabCurrent="0" grabMax="20"/>`, prefix, x.apiUsed, x.opts.APIMax)
}

func (x *Indexer) writeCaps(w http.ResponseWriter) {
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<caps>
  <server version="1.0" title="fakeindexer" strapline="for tests"/>
  <limits max="%d" default="%d"/>
  %s
  <retention days="4000"/>
  <registration available="no" open="no"/>
  <searching>
    <search available="yes" supportedParams="q"/>
    <tv-search available="yes" supportedParams="q,season,ep"/>
    <movie-search available="no" supportedParams="q"/>
  </searching>
  <categories>
    <category id="2000" name="Movies"><subcat id="2040" name="HD"/></category>
    <category id="5000" name="TV"><subcat id="5040" name="HD"/><subcat id="5030" name="SD"/></category>
  </categories>
</caps>
`, x.opts.MaxLimit, x.opts.DefaultLimit, x.limitsElem(""))
}

func (x *Indexer) writeSearch(w http.ResponseWriter, req Request, limit int) {
	ns, prefix, mime := `xmlns:newznab="http://www.newznab.com/DTD/2010/feeds/attributes/"`, "newznab", "application/x-nzb"
	if x.opts.Torznab {
		ns, prefix, mime = `xmlns:torznab="http://torznab.com/schemas/2015/feed"`, "torznab", "application/x-bittorrent"
	}
	// Newest first: the last release added is at offset 0.
	var page []Release
	for i := len(x.releases) - 1 - req.Offset; i >= 0 && len(page) < limit; i-- {
		r := x.releases[i]
		if req.Query != "" && !strings.Contains(strings.ToLower(r.Title), strings.ToLower(req.Query)) {
			continue
		}
		page = append(page, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" %s>
<channel>
  <atom:link href="%s" rel="self" type="application/rss+xml"/>
  <title>fakeindexer</title>
  <description>fakeindexer feed</description>
  <link>%s</link>
  <%s:response offset="%d" total="%d"/>
  %s
`, ns, esc(x.srv.URL+"/api"), esc(x.srv.URL), prefix, req.Offset, len(x.releases), x.limitsElem("newznab:"))
	for _, r := range page {
		if r.Unidentified {
			fmt.Fprintf(&b, `  <item>
    <title>%s</title>
    <pubDate>%s</pubDate>
    <%s:attr name="category" value="%d"/>
    <%s:attr name="size" value="%d"/>
  </item>
`, esc(r.Title), r.Published.Format(time.RFC1123Z), prefix, r.Category, prefix, r.Size)
			continue
		}
		dl := fmt.Sprintf("%s/getnzb/%s.nzb?i=1&r=%s", x.srv.URL, r.GUID, req.APIKey)
		guid := x.srv.URL + "/details/" + r.GUID
		guidAttr := fmt.Sprintf(`<%s:attr name="guid" value="%s"/>`, prefix, r.GUID)
		if x.opts.KeyInGUID {
			guid += "?apikey=" + req.APIKey
			guidAttr = ""
		}
		fmt.Fprintf(&b, `  <item>
    <title>%s</title>
    <guid isPermaLink="true">%s</guid>
    <link>%s</link>
    <comments>%s/details/%s#comments</comments>
    <pubDate>%s</pubDate>
    <category>TV &gt; HD</category>
    <description>%s</description>
    <enclosure url="%s" length="%d" type="%s"/>
    <%s:attr name="category" value="%d"/>
    <%s:attr name="category" value="%d"/>
    <%s:attr name="size" value="%d"/>
    %s
    <%s:attr name="grabs" value="7"/>
`, esc(r.Title), esc(guid), esc(dl), x.srv.URL, r.GUID, r.Published.Format(time.RFC1123Z),
			esc(r.Title), esc(dl), r.Size, mime,
			prefix, r.Category/1000*1000, prefix, r.Category, prefix, r.Size, guidAttr, prefix)
		if x.opts.Torznab {
			fmt.Fprintf(&b, `    <torznab:attr name="seeders" value="12"/>
    <torznab:attr name="peers" value="15"/>
    <torznab:attr name="infohash" value="%040x"/>
`, r.Size)
		}
		b.WriteString("  </item>\n")
	}
	b.WriteString("</channel>\n</rss>\n")
	_, _ = w.Write([]byte(b.String()))
}
