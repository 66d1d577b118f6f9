package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeIndexer is a small Newznab indexer on 127.0.0.1: caps, and t=search
// with an empty query over a list of releases, newest first, by offset.
// Like real indexers it writes the API key into download links, and (like
// some Torznab proxies) into guids. feed/internal/fakeindexer is richer,
// but internal to the feed package.
type fakeIndexer struct {
	srv *httptest.Server
	key string

	mu       sync.Mutex
	releases int // release n (1-based) is published n minutes after base
	searches int
	badKeys  int
}

var indexerBase = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func newFakeIndexer(t *testing.T, key string, releases int) *fakeIndexer {
	x := &fakeIndexer{key: key, releases: releases}
	x.srv = httptest.NewServer(http.HandlerFunc(x.serve))
	t.Cleanup(x.srv.Close)
	return x
}

func (x *fakeIndexer) URL() string { return x.srv.URL + "/api" }

func (x *fakeIndexer) Searches() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.searches
}

func (x *fakeIndexer) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/rss+xml")
	switch q.Get("t") {
	case "caps":
		fmt.Fprint(w, `<?xml version="1.0"?><caps><limits max="100" default="50"/>`+
			`<searching><search available="yes" supportedParams="q"/></searching></caps>`)
		return
	case "search":
	default:
		fmt.Fprint(w, `<error code="202" description="No such function"/>`)
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.searches++
	if q.Get("apikey") != x.key {
		x.badKeys++
		fmt.Fprint(w, `<error code="100" description="Incorrect user credentials"/>`)
		return
	}
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 50
	}
	fmt.Fprintf(w, `<?xml version="1.0"?><rss version="2.0" xmlns:newznab="http://www.newznab.com/DTD/2010/feeds/attributes/"><channel>`+
		`<newznab:response offset="%d" total="%d"/>`, offset, x.releases)
	for n := x.releases - offset; n >= 1 && n > x.releases-offset-limit; n-- {
		pub := indexerBase.Add(time.Duration(n) * time.Minute).Format(time.RFC1123Z)
		fmt.Fprintf(w, `<item><title>Release.%03d</title><guid>%s/details/%d?apikey=%s</guid>`+
			`<link>%s/getnzb/%d.nzb?r=%s</link><pubDate>%s</pubDate>`+
			`<newznab:attr name="size" value="%d"/><newznab:attr name="category" value="5040"/></item>`,
			n, x.srv.URL, n, x.key, x.srv.URL, n, x.key, pub, 1000+n)
	}
	fmt.Fprint(w, `</channel></rss>`)
}
