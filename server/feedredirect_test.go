package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
)

// TestFeedRedirectToAnotherOriginIsRefused: an indexer answering
// 302 Location: http://127.0.0.1:OTHER/landing must not make the daemon
// send anything to OTHER, nor a Referer with the key anywhere; the feed
// shows a clear error naming the target without its query.
func TestFeedRedirectToAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	var otherHits, referers atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
	}))
	t.Cleanup(other.Close)
	indexer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Referer") != "" {
			referers.Add(1)
		}
		http.Redirect(w, r, other.URL+"/landing?session=s3ss10n", http.StatusFound)
	}))
	t.Cleanup(indexer.Close)
	f := setup(t, func(c *Config) {
		c.Feeds = []Feed{{Name: "steered", URL: indexer.URL + "/api", APIKey: testAPIKey}}
	})
	var v feedView
	waitfor.True(t, 10*time.Second, "the feed never failed", func() bool {
		_, v, _ = f.feedNamed("steered")
		return v.LastError != ""
	})
	if !strings.Contains(v.LastError, "redirected to "+other.URL+"/landing, outside") ||
		strings.Contains(v.LastError, "s3ss10n") || strings.Contains(v.LastError, testAPIKey) {
		t.Fatalf("last_error %q: want the refused redirect, its target masked", v.LastError)
	}
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the other origin got %d requests", n)
	}
	if n := referers.Load(); n != 0 {
		t.Fatalf("%d requests carried a Referer", n)
	}
	// The dashboard reads the status report, which shortens the error.
	var rep statusReport
	decodeInto(t, f.do("GET", "/v1/status", nil), &rep)
	if len(rep.Feeds) != 1 || !strings.Contains(rep.Feeds[0].LastError, "the indexer redirected to") ||
		strings.Contains(rep.Feeds[0].LastError, testAPIKey) {
		t.Fatalf("status feeds: %+v", rep.Feeds)
	}
}

// TestFeedNeverReachesTheDaemonItself: a feed may be on loopback, but not
// on the daemon's own listeners, where it would send the key to the API.
func TestFeedNeverReachesTheDaemonItself(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, target := range []string{f.api, "http://" + f.proxy} {
		name := "self-" + strings.TrimPrefix(target, "http://127.0.0.1:")
		if _, _, _, err := f.s.SetFeeds([]Feed{{Name: name, URL: target + "/api", APIKey: testAPIKey}}); err != nil {
			t.Fatal(err)
		}
		var v feedView
		waitfor.True(t, 10*time.Second, name+" never failed", func() bool {
			_, v, _ = f.feedNamed(name)
			return v.LastError != ""
		})
		if !strings.Contains(v.LastError, "this daemon itself") {
			t.Fatalf("%s: last_error %q; want the daemon's own listener refused", name, v.LastError)
		}
	}
}
