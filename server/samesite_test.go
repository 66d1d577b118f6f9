package server

import (
	"net/http"
	"sync/atomic"
	"testing"
)

// TestSameSiteMayOnlyRead: a page on another port of this host is
// same-site to the daemon; what its browser sends is refused on the
// routes that contact hosts or change state, and read routes still
// answer it.
func TestSameSiteMayOnlyRead(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var hits atomic.Int32
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	for _, tc := range []struct {
		method, path, site string
		want               int
	}{
		{"GET", fetchPath(up.URL + "/"), "same-site", http.StatusForbidden},
		{"HEAD", fetchPath(up.URL + "/"), "same-site", http.StatusForbidden},
		{"POST", "/v1/guard/reset-all", "same-site", http.StatusForbidden},
		{"GET", "/v1/guard", "same-site", http.StatusOK},
		{"GET", "/v1/status", "same-site", http.StatusOK},
	} {
		a := f.do(tc.method, tc.path, nil, "Sec-Fetch-Site", tc.site)
		if a.status != tc.want {
			t.Errorf("%s %s with Sec-Fetch-Site %s: %d %s, want %d", tc.method, tc.path, tc.site, a.status, a.body, tc.want)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the upstream was contacted %d times for same-site requests", n)
	}
	for _, site := range []string{"same-origin", "none"} {
		if a := f.do("GET", fetchPath(up.URL+"/"), nil, "Sec-Fetch-Site", site); a.status != http.StatusOK {
			t.Errorf("fetch with Sec-Fetch-Site %s: %d, want 200", site, a.status)
		}
	}
}
