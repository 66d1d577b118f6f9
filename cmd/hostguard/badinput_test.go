package main

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/store/storetest"
)

// The bad-input table: requests an attacker on the machine might send.
// Against the real binary, on each engine, every one is answered below
// 500 and none changes what the daemon holds.
var badInputs = []struct{ method, path, body string }{
	// Numbers beyond every documented maximum.
	{"POST", "/v1/budget/admit", `{"kind":"validation","source":"idx","cost":9223372036854775807}`},
	{"POST", "/v1/budget/admit", `{"kind":"validation","source":"idx","cost":-1}`},
	{"POST", "/v1/budget/admit", `{"kind":"validation","source":"idx","cost":1e400}`},
	{"POST", "/v1/budget/admit", `{"kind":"validation","source":"idx","cost":18446744073709551616}`},
	{"POST", "/v1/budget/admit", `{"kind":"validation","source":"idx","cost":1.5}`},
	{"POST", "/v1/budget/admit", `{"kind":"bytes","source":"idx","cost":9007199254740993}`},
	{"POST", "/v1/budget/grants/nope/settle", `{"actual":9223372036854775807}`},
	{"POST", "/v1/budget/grants/nope/settle", `{"actual":-5}`},
	{"PUT", "/v1/budget/sources/big", `{"owner_daily_limit":9223372036854775807}`},
	{"PUT", "/v1/budget/sources/big", `{"owner_daily_limit":-2}`},
	{"PUT", "/v1/budget/sources/big", `{"reserve_percent":101}`},
	{"PUT", "/v1/budget/sources/big", `{"pace_seconds":1e308}`},
	{"PUT", "/v1/budget/sources/big", `{"pace_seconds":-1}`},
	{"POST", "/v1/items/claim", `{"n":9223372036854775807,"lease_seconds":30}`},
	{"POST", "/v1/items/claim", `{"n":-1,"lease_seconds":30}`},
	{"POST", "/v1/items/claim", `{"n":1,"lease_seconds":1e300}`},
	{"POST", "/v1/items/claim", `{"n":1,"lease_seconds":-3}`},
	{"POST", "/v1/items/claim", `{"n":1,"lease_seconds":30,"wait_seconds":1e300}`},
	{"POST", "/v1/items", `{"items":[{"id":"new","priority":9223372036854775807}]}`},
	{"POST", "/v1/items/x/extend", `{"lease":"nope","lease_seconds":1e300}`},
	{"POST", "/v1/items/x/observe", `{"boost":9223372036854775807}`},
	{"GET", "/v1/feeds/idx/items?limit=99999999999999999999", ""},
	{"GET", "/v1/feeds/idx/items?limit=-1", ""},
	{"GET", "/v1/hosts?limit=-1", ""},
	// Strings with NUL, invalid UTF-8 and control characters: in bodies,
	// path segments and query values.
	{"POST", "/v1/items", `{"items":[{"id":"a\u0000b"}]}`},
	{"POST", "/v1/items", "{\"items\":[{\"id\":\"a\xffb\"}]}"},
	{"POST", "/v1/items", `{"items":[{"id":"a\u0007b"}]}`},
	{"POST", "/v1/items/claim", `{"n":1,"lease_seconds":30,"worker":"w\u0000"}`},
	{"POST", "/v1/items/x/fail", `{"lease":"nope","class":"timeout","note":"n\u0000"}`},
	{"POST", "/v1/items/observe", `{"ids":["\u0085"],"add_if_missing":true}`},
	{"GET", "/v1/items/a%00b", ""},
	{"GET", "/v1/items/%FFx", ""},
	{"POST", "/v1/items/%FFx/observe", `{"add_if_missing":true}`},
	{"POST", "/v1/items/a%07/succeed", `{"lease":"x"}`},
	{"PUT", "/v1/budget/sources/%FFx", `{"owner_daily_limit":5}`},
	{"PUT", "/v1/budget/sources/a%00", `{"owner_daily_limit":5}`},
	{"DELETE", "/v1/budget/sources/%FFx", ""},
	{"POST", "/v1/budget/admit", `{"kind":"validation","source":"idx\u0000"}`},
	{"POST", "/v1/budget/grants/%00/settle", `{"actual":1}`},
	{"POST", "/v1/evidence", `{"source":"s\u0000","subject":"x","verdict":"available"}`},
	{"POST", "/v1/evidence", "{\"source\":\"s\",\"subject\":\"x\xfe\",\"verdict\":\"good\"}"},
	{"POST", "/v1/evidence", `{"source":"s","subject":"x","fingerprint":"f\u0001","verdict":"available"}`},
	{"GET", "/v1/evidence/a%00", ""},
	{"GET", "/v1/evidence/%FF", ""},
	{"GET", "/v1/evidence/x?fingerprint=%00", ""},
	{"POST", "/v1/evidence/policy", `{"fingerprint":"p\u0000"}`},
	{"POST", "/v1/hosts/a%00.example/touch", `{"ok":true}`},
	{"POST", "/v1/hosts/%FF.example/touch", `{"ok":false}`},
	{"GET", "/v1/hosts/a%01", ""},
	{"GET", "/v1/hosts?after=%00", ""},
	{"GET", "/v1/hosts?after=%FF", ""},
	{"POST", "/v1/feeds/a%00/reset", ""},
	{"GET", "/v1/feeds/%FF/items", ""},
	{"GET", "/v1/feeds/idx/items?after=%00", ""},
	{"GET", "/v1/guard?state=%00", ""},
	{"POST", "/v1/guard/acquire", `{"url":"http://a\u0000.example/"}`},
	{"POST", "/v1/guard/report", `{"ticket":"\u0000","outcome":"success"}`},
	{"GET", "/v1/fetch?url=http%3A%2F%2F127.0.0.1%00%2F", ""},
	{"GET", "/v1/items/stats?x=%ZZ", ""},
	// Shapes.
	{"POST", "/v1/items", `{"items":[{"id":"x"}],"items":[]}`},
	{"POST", "/v1/items", `null`},
	{"POST", "/v1/items", `{"items":[{"id":"x"}]} trailing`},
	{"POST", "/v1/budget/pause", `{"paused":"yes"}`},
	{"POST", "/v1/budget/pause", `{"Paused":true}`},
	{"POST", "/v1/budget/sources/idx/pause", `{"paused":1}`},
	{"POST", "/v1/budget/sources/idx/pause", `{"paused":true,"paused":false}`},
}

func TestBadInputTable(t *testing.T) {
	bin := buildBinary(t)
	engines := map[string]func(t *testing.T) string{
		"sqlite":     func(t *testing.T) string { return filepath.Join(t.TempDir(), "bad.db") },
		"postgresql": func(t *testing.T) string { return storetest.PostgresDSN(t) },
	}
	for _, name := range []string{"sqlite", "postgresql"} {
		t.Run(name, func(t *testing.T) {
			d := start(t, bin, engines[name](t))
			// Some state to keep: an item under lease, an evidence record.
			d.call(t, "POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "x"}, {"id": "y"}}}, 200, nil)
			d.call(t, "POST", "/v1/items/claim", map[string]any{"n": 1, "lease_seconds": 600}, 200, nil)
			d.call(t, "POST", "/v1/evidence", map[string]any{"source": "s", "subject": "x", "verdict": "available"}, 200, nil)
			d.call(t, "POST", "/v1/hosts/h.example/touch", map[string]any{"ok": true}, 200, nil)
			before := d.snapshot(t)
			fives := 0
			for _, c := range badInputs {
				status, body := d.send(t, c.method, c.path, c.body)
				if status >= 500 || status < 400 {
					t.Errorf("%s %s %q: %d %s", c.method, c.path, c.body, status, body)
					if status >= 500 {
						fives++
					}
				}
			}
			if after := d.snapshot(t); after != before {
				t.Errorf("state changed:\nbefore %s\nafter  %s", before, after)
			}
			t.Logf("%d requests, %d answers of 500 or more", len(badInputs), fives)
			if strings.Contains(d.logs.String(), `"level":"ERROR"`) {
				t.Errorf("bad input logged an error:\n%s", d.logs.String())
			}
		})
	}
}

func (d *daemonProc) send(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.api+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(b))
}

var dueLag = regexp.MustCompile(`"oldest_due_lag_seconds":[0-9.e-]+`)

// snapshot is what the daemon holds, as its read routes tell it.
func (d *daemonProc) snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{"/v1/budget", "/v1/items/stats", "/v1/items/x", "/v1/items/y", "/v1/hosts", "/v1/evidence/x", "/v1/guard", "/v1/feeds"} {
		status, body := d.send(t, "GET", p, "")
		// The one figure that moves with the clock alone.
		body = dueLag.ReplaceAllString(body, "")
		b.WriteString(p + " " + http.StatusText(status) + " " + body + "\n")
	}
	return b.String()
}
