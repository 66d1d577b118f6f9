package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
)

// recorder is an upstream that remembers what reached it.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (rec *recorder) server(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r)
		rec.body = append(rec.body, string(b))
		rec.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (rec *recorder) last(t *testing.T) (*http.Request, string) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("nothing reached the upstream")
	}
	return rec.reqs[len(rec.reqs)-1], rec.body[len(rec.body)-1]
}

func fetchPath(upstream string, extra ...string) string {
	p := "/v1/fetch?url=" + url.QueryEscape(upstream)
	for _, e := range extra {
		p += "&" + e
	}
	return p
}

func TestFetchPassesRequestAndResponseThrough(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Token = "s3cret" })
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", "yes")
		w.Header().Set("Connection", "X-Drop-Me")
		w.Header().Set("X-Drop-Me", "hop")
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, "short and stout")
	})
	// The upstream URL has its own query, including a parameter named like
	// the route's own control parameter; it must arrive untouched, while
	// the route's exempt=1 must not.
	target := up.URL + "/pot?exempt=keep&q=a+b"
	a := f.do("POST", fetchPath(target, "exempt=1"), "tea=earl-grey",
		"Authorization", "Bearer s3cret", "X-Custom", "kept", "Connection", "X-Hop", "X-Hop", "gone")
	if a.status != http.StatusTeapot || string(a.body) != "short and stout" || a.header.Get("X-Upstream") != "yes" {
		t.Fatalf("answer %d %q %v", a.status, a.body, a.header)
	}
	if a.header.Get("X-Drop-Me") != "" {
		t.Fatal("a header the upstream named in Connection was forwarded to the client")
	}
	r, body := rec.last(t)
	if r.Method != "POST" || body != "tea=earl-grey" {
		t.Fatalf("upstream saw %s with body %q", r.Method, body)
	}
	if r.URL.RequestURI() != "/pot?exempt=keep&q=a+b" {
		t.Fatalf("upstream saw %q, want the url parameter's own path and query only", r.URL.RequestURI())
	}
	if r.Header.Get("Authorization") != "" {
		t.Fatal("the daemon's bearer token was forwarded upstream")
	}
	if r.Header.Get("X-Custom") != "kept" || r.Header.Get("X-Hop") != "" {
		t.Fatalf("upstream headers: %v", r.Header)
	}
}

func TestFetchExemptNeverTripsAndPlainDoes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dead := faulthost.ClosedPort()
	t.Cleanup(dead.Close)
	for range 3 {
		a := f.do("GET", fetchPath(dead.URL()+"/", "exempt=true"), nil)
		expectError(t, a, http.StatusBadGateway, "")
		if a.json(t)["class"] != "refused" {
			t.Fatalf("class %v, want refused", a.json(t)["class"])
		}
	}
	if st := f.s.guard.State(dead.URL()); st != guard.Closed {
		t.Fatalf("exempt failures changed the endpoint to %v", st)
	}
	for range 2 {
		expectError(t, f.do("GET", fetchPath(dead.URL()+"/"), nil), http.StatusBadGateway, "")
	}
	a := f.do("GET", fetchPath(dead.URL()+"/"), nil)
	expectError(t, a, http.StatusServiceUnavailable, "")
	if a.header.Get("Retry-After") == "" || a.json(t)["endpoint"] != dead.URL() {
		t.Fatalf("fast-fail without Retry-After or endpoint: %v %s", a.header, a.body)
	}
}

func TestFetchFastFailDoesNoNetworkWork(t *testing.T) {
	t.Parallel()
	f := setup(t)
	silent := faulthost.NeverAnswers()
	t.Cleanup(silent.Close)
	for range 2 {
		a := f.do("GET", fetchPath(silent.URL()+"/"), nil)
		expectError(t, a, http.StatusGatewayTimeout, "")
	}
	before := silent.Conns()
	a := f.do("GET", fetchPath(silent.URL()+"/x"), nil)
	expectError(t, a, http.StatusServiceUnavailable, "")
	if silent.Conns() != before {
		t.Fatalf("a fast-failed fetch reached the host (%d connections, was %d)", silent.Conns(), before)
	}
	// A 5xx from the upstream is an answer: passed through, never tripping.
	bad := faulthost.Status(502)
	t.Cleanup(bad.Close)
	for range 3 {
		if a := f.do("GET", fetchPath(bad.URL()+"/"), nil); a.status != 502 || a.header.Get("Content-Type") == "application/json" {
			t.Fatalf("upstream 502 came back as %d %s", a.status, a.header.Get("Content-Type"))
		}
	}
}

func TestFetchStreamsATricklingBody(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Gaps below the idle timeout, total well above it: never cut.
	slow := faulthost.Trickle(100, 50*time.Millisecond, 1500)
	t.Cleanup(slow.Close)
	a := f.do("GET", fetchPath(slow.URL()+"/"), nil)
	if a.status != 200 || len(a.body) != 1500 {
		t.Fatalf("trickled body: %d, %d bytes", a.status, len(a.body))
	}
}

func TestFetchStalledBodyIsCutNotCompleted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	stall := faulthost.StallsMidBody()
	t.Cleanup(stall.Close)
	resp, err := testClient(t).Get(f.api + fetchPath(stall.URL()+"/"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("a stalled upstream body reached the client as complete (%d bytes)", len(b))
	}
	if len(b) != faulthost.StallSent {
		t.Fatalf("client got %d bytes before the cut, want %d", len(b), faulthost.StallSent)
	}
	if st := f.s.guard.State(stall.URL()); st != guard.Closed {
		t.Fatalf("a stalled body changed the endpoint to %v; it answered", st)
	}
}

func TestFetchBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cases := []struct {
		name, query string
		field       string
	}{
		{"no url", "", "url"},
		{"empty url", "url=", "url"},
		{"twice", "url=http%3A%2F%2Fa&url=http%3A%2F%2Fb", "url"},
		{"unencoded query split off", "url=http://a.example/?x=1&y=2", "y"},
		{"not http", "url=" + url.QueryEscape("ftp://a.example/f"), "url"},
		{"no host", "url=" + url.QueryEscape("http:///path"), "url"},
		{"relative", "url=%2Fpath", "url"},
		{"bad exempt", "url=http%3A%2F%2Fa&exempt=maybe", "exempt"},
		{"exempt twice", "url=http%3A%2F%2Fa&exempt=1&exempt=0", "exempt"},
		{"bad escape", "url=%zz", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, f.do("GET", "/v1/fetch?"+c.query, nil), http.StatusBadRequest, c.field)
		})
	}
	if f.s.guard.Len() != 0 {
		t.Fatalf("bad fetches created %d guard records", f.s.guard.Len())
	}
	a := f.do("PUT", fetchPath("http://a.example/"), nil)
	expectError(t, a, http.StatusMethodNotAllowed, "")
	if !strings.Contains(a.header.Get("Allow"), "POST") {
		t.Fatalf("Allow %q", a.header.Get("Allow"))
	}
}

func FuzzFetchParams(f *testing.F) {
	for _, s := range []string{"url=http%3A%2F%2Fa%2F%3Fexempt%3D1&exempt=1", "url=http://a/?x=1&y=2", "exempt=1", "url=%zz", "url=http%3A%2F%2F%5B%3A%3A1%5D%3A80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		target, _, err := fetchParams(q)
		if err != nil {
			e := (&Server{}).errorFor(err)
			if e.Status != http.StatusBadRequest || !strings.HasPrefix(e.Message, "server: ") {
				t.Fatalf("error %+v", e)
			}
			return
		}
		// The target is exactly the one url value, an absolute http(s) URL.
		vals, err := url.ParseQuery(q)
		if err != nil || len(vals["url"]) != 1 || vals.Get("url") != target {
			t.Fatalf("target %q is not the query's single url value", target)
		}
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			t.Fatalf("accepted target %q", target)
		}
	})
}
