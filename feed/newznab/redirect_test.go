package newznab_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/hostguard/hostguard/feed/newznab"
	"github.com/hostguard/hostguard/internal/fakeindexer"
)

// hits records the requests a test server got.
type hits struct {
	mu       sync.Mutex
	paths    []string
	referers []string
}

func (h *hits) add(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paths = append(h.paths, r.URL.Path)
	if ref := r.Header.Get("Referer"); ref != "" {
		h.referers = append(h.referers, ref)
	}
}

func (h *hits) snapshot() (paths, referers []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.paths...), append([]string(nil), h.referers...)
}

// TestRedirectToAnotherOriginIsRefused: an indexer that answers with a
// redirect to another port of the same host makes the client send
// nothing there, and the error names where it pointed without its query.
func TestRedirectToAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	var other hits
	otherSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.add(r) }))
	defer otherSrv.Close()
	var idx hits
	indexer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idx.add(r)
		http.Redirect(w, r, otherSrv.URL+"/landing?token=abc&apikey="+key, http.StatusFound)
	}))
	defer indexer.Close()

	c := newClient(t, newznab.Config{URL: indexer.URL + "/api", APIKey: key})
	for _, call := range []func() error{
		func() error { _, err := c.Caps(ctx(t)); return err },
		func() error { _, err := c.Search(ctx(t), newznab.SearchParams{}); return err },
		func() error { _, err := c.Page(ctx(t), 0); return err },
	} {
		err := call()
		var re *newznab.RedirectError
		if !errors.As(err, &re) || re.TooMany {
			t.Fatalf("err = %v; want a RedirectError to another origin", err)
		}
		msg := err.Error()
		if !strings.Contains(msg, otherSrv.URL+"/landing") || strings.Contains(msg, "token=abc") ||
			strings.Contains(msg, key) || strings.Contains(msg, "?apikey") {
			t.Fatalf("error %q: want the target named without its query or the key", msg)
		}
	}
	if paths, _ := other.snapshot(); len(paths) != 0 {
		t.Fatalf("the other origin got %d requests: %v", len(paths), paths)
	}
	if paths, _ := idx.snapshot(); len(paths) == 0 {
		t.Fatal("the indexer was never asked")
	}
}

// TestRedirectWithinTheOriginIsFollowedWithoutReferer: a redirect on the
// indexer's own origin is followed, and no hop carries a Referer (Go's
// client would send the previous URL, key and all).
func TestRedirectWithinTheOriginIsFollowedWithoutReferer(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{APIKey: key})
	defer x.Close()
	x.Publish(2, t0)
	target, err := url.Parse(x.URL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	var seen hits
	mux := http.NewServeMux()
	mux.HandleFunc("/old/api", func(w http.ResponseWriter, r *http.Request) {
		seen.add(r)
		http.Redirect(w, r, "/api?"+r.URL.RawQuery, http.StatusMovedPermanently)
	})
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		seen.add(r)
		rp.ServeHTTP(w, r)
	})
	front := httptest.NewServer(mux)
	defer front.Close()

	c := newClient(t, newznab.Config{URL: front.URL + "/old/api", APIKey: key})
	p, err := c.Search(ctx(t), newznab.SearchParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 2 {
		t.Fatalf("%d items through the redirect; want 2", len(p.Items))
	}
	paths, referers := seen.snapshot()
	if strings.Join(paths, " ") != "/old/api /api" {
		t.Fatalf("paths %v; want the redirect followed once", paths)
	}
	if len(referers) != 0 {
		t.Fatalf("Referer sent: %q", referers)
	}
}

// TestRedirectLoopWithinTheOriginIsBounded: redirects on the origin are
// followed MaxRedirects times, then refused.
func TestRedirectLoopWithinTheOriginIsBounded(t *testing.T) {
	t.Parallel()
	var seen hits
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r)
		http.Redirect(w, r, "/api?"+r.URL.RawQuery, http.StatusFound)
	}))
	defer srv.Close()
	c := newClient(t, newznab.Config{URL: srv.URL + "/api", APIKey: key})
	_, err := c.Search(ctx(t), newznab.SearchParams{})
	var re *newznab.RedirectError
	if !errors.As(err, &re) || !re.TooMany {
		t.Fatalf("err = %v; want too many redirects", err)
	}
	if strings.Contains(err.Error(), key) {
		t.Fatalf("error carries the key: %v", err)
	}
	if paths, referers := seen.snapshot(); len(paths) != newznab.MaxRedirects+1 || len(referers) != 0 {
		t.Fatalf("%d requests, referers %q; want %d and none", len(paths), referers, newznab.MaxRedirects+1)
	}
}
