package server

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStatusLabelsAreAClosedSet: however many odd status codes upstreams
// answer, through the proxy's fast path, the path it hands off and the
// fetch route, the code label takes its values from one closed set: the
// codes net/http names, their classes and "other".
func TestStatusLabelsAreAClosedSet(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{"1xx": true, "2xx": true, "3xx": true, "4xx": true, "5xx": true, "other": true}
	for code := 100; code < 600; code++ {
		if http.StatusText(code) != "" {
			allowed[strconv.Itoa(code)] = true
		}
	}
	f := setup(t)
	rec := &recorder{}
	up := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("c"))
		w.WriteHeader(code)
	})
	host := strings.TrimPrefix(up.URL, "http://")
	var odd []int
	for code := 200; code < 1000; code += 7 {
		if http.StatusText(code) == "" && code != 204 && code != 304 {
			odd = append(odd, code)
		}
	}
	c, br := f.rawProxyConn(t)
	for i, code := range odd {
		req := "GET %s/?c=%d HTTP/1.1\r\nHost: %s\r\n\r\n"
		if i == len(odd)-1 {
			// The last hands the connection off.
			req = "POST %s/?c=%d HTTP/1.1\r\nHost: %s\r\nContent-Length: 1\r\n\r\nx"
		}
		fmt.Fprintf(c, req, up.URL, code, host)
		if got, _ := readAnswer(t, br, "GET"); got != code {
			t.Fatalf("the proxy answered %d for the upstream's %d", got, code)
		}
	}
	for _, code := range odd[:5] {
		if a := f.do("GET", fetchPath(fmt.Sprintf("%s/?c=%d", up.URL, code)), nil); a.status != code {
			t.Fatalf("fetch answered %d for the upstream's %d", a.status, code)
		}
	}
	text := string(f.do("GET", "/metrics", nil).body)
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`code="([^"]*)"`).FindAllStringSubmatch(text, -1) {
		seen[m[1]] = true
		if !allowed[m[1]] {
			t.Errorf("code label %q is outside the closed set", m[1])
		}
	}
	// The odd codes are counted, by class.
	for _, want := range []string{"2xx", "4xx", "5xx", "other"} {
		if !seen[want] {
			t.Errorf("no code label %q after odd codes; saw %v", want, seen)
		}
	}
}
