package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// e2eKey is the indexer's API key; the daemon reads it from E2E_INDEXER_KEY.
const e2eKey = "e2e-indexer-key-9f8e7d"

// indexer is a Newznab indexer on 127.0.0.1 with four releases. Like real
// indexers it writes the key into download links. It counts searches.
type indexer struct {
	srv      *httptest.Server
	searches atomic.Int64
}

func newIndexer(t *testing.T) *indexer {
	x := &indexer{}
	x.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("t") == "caps" {
			fmt.Fprint(w, `<caps><limits max="100" default="100"/></caps>`)
			return
		}
		x.searches.Add(1)
		if q.Get("apikey") != e2eKey {
			fmt.Fprint(w, `<error code="100" description="Incorrect user credentials"/>`)
			return
		}
		fmt.Fprint(w, `<rss xmlns:newznab="http://www.newznab.com/DTD/2010/feeds/attributes/"><channel>`)
		if off := q.Get("offset"); off == "" || off == "0" {
			for n := 4; n >= 1; n-- {
				fmt.Fprintf(w, `<item><title>Film.%d.2160p</title><guid>%s/details/%d</guid><link>%s/getnzb/%d?r=%s</link>`+
					`<pubDate>Sun, 01 Mar 2026 10:0%d:00 +0000</pubDate><newznab:attr name="size" value="%d"/></item>`,
					n, x.srv.URL, n, x.srv.URL, n, e2eKey, n, n<<30)
			}
		}
		fmt.Fprint(w, `</channel></rss>`)
	}))
	t.Cleanup(x.srv.Close)
	return x
}
