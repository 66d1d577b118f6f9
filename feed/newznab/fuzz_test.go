package newznab

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

const fuzzRSS = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:newznab="http://www.newznab.com/DTD/2010/feeds/attributes/">
<channel>
<newznab:response offset="0" total="2"/>
<newznab:apilimits apiCurrent="3" apiMax="100" grabCurrent="1" grabMax="10" apiNextAvailable="2026-01-01T00:00:00Z"/>
<item><title>A</title><guid>https://x/details/a</guid><link>https://x/getnzb/a?r=KEY</link>
<pubDate>Mon, 02 Jan 2006 15:04:05 +0000</pubDate><enclosure url="https://x/a" length="10" type="application/x-nzb"/>
<newznab:attr name="size" value="123"/><newznab:attr name="category" value="2000"/><newznab:attr name="category" value="2040"/></item>
<item><title>B</title><link>https://x/getnzb/b?r=KEY</link><pubDate>2006-01-02T15:04:05Z</pubDate></item>
</channel></rss>`

const fuzzCaps = `<caps><server version="1.0" title="t"/><limits max="100" default="50"/>
<apilimits apiMax="1000"/><searching><search available="yes"/></searching>
<categories><category id="2000" name="Movies"><subcat id="2040" name="HD"/></category></categories></caps>`

func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{
		fuzzRSS,
		`<error code="100" description="Incorrect user credentials"/>`,
		`<?xml version="1.0" encoding="latin1"?><rss><channel></channel></rss>`,
		`<rss><channel><item><torznab:attr name="seeders" value="5"/><guid>g</guid></item></channel></rss>`,
		`<html><body>maintenance</body></html>`,
		``,
		`{"code":"100","description":"Wrong api key"}`,
		`{"error":{"@attributes":{"code":"500","description":"Request limit reached"}}}`,
		`{"error":{"code":429,"description":"Indexer is disabled till 2026-12-01 20:30:00"}}`,
		`{"error":"Too Many Requests"}`,
		`{"channel":{"item":[]}}`,
		`<rss><channel><item><newznab:attr name="size" value="1"/><torznab:attr name="size" value="1"/><torznab:attr name="size" value="2"/><link>https://x/a?apikey=KEY</link></item><item><title>none</title></item></channel></rss>`,
		`<rss><channel><item><guid>` + string(bytes.Repeat([]byte("x"), 3000)) + `</guid></item></channel></rss>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseSearch(data, "KEY")
		if err != nil {
			var ie *Error
			if errors.As(err, &ie) && ie.kind == nil {
				t.Fatalf("error document without a kind: %+v", ie)
			}
			return
		}
		if len(p.all) != len(p.Items)+len(p.Skipped) {
			t.Fatalf("%d items and %d skipped, but %d in the page", len(p.Items), len(p.Skipped), len(p.all))
		}
		for _, s := range p.Skipped {
			if s.Reason == "" || p.all[s.Index].ID != "" || p.all[s.Index].Skip != s.Reason {
				t.Fatalf("skip %+v does not match its placeholder %+v", s, p.all[s.Index])
			}
		}
		for _, c := range p.Conflicts {
			if c.Kept == c.Dropped || strings.Contains(c.Kept+c.Dropped, "KEY") {
				t.Fatalf("conflict %+v", c)
			}
		}
		for _, it := range p.Items {
			if it.ID == "" || len(it.ID) > 2048 || strings.Contains(it.ID, "KEY") {
				t.Fatalf("item with an unusable id %q", it.ID)
			}
			if len(it.Attrs) > maxAttrs+4 {
				t.Fatalf("item with %d attributes", len(it.Attrs))
			}
			if it.Size < 0 {
				t.Fatalf("negative size %d", it.Size)
			}
		}
		if p.Limits.APIMax < 0 || p.Limits.APICurrent < 0 {
			t.Fatalf("negative limits %+v", p.Limits)
		}
	})
}

func FuzzParseCaps(f *testing.F) {
	f.Add([]byte(fuzzCaps))
	f.Add([]byte(`<error code="910" description="API Disabled"/>`))
	f.Add([]byte(`<caps><limits max="-5" default="x"/></caps>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseCaps(data)
		if err != nil {
			return
		}
		if c.MaxLimit < 0 || c.DefaultLimit < 0 {
			t.Fatalf("negative limits %+v", c)
		}
		n := 0
		for _, cat := range c.Categories {
			n += 1 + len(cat.Subcats)
		}
		if n > maxCategories {
			t.Fatalf("%d categories kept", n)
		}
	})
}

func TestParseSeeds(t *testing.T) {
	p, err := parseSearch([]byte(fuzzRSS), "KEY")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 2 || p.Total != 2 || !p.Limits.Present || p.Limits.APIMax != 100 || p.Limits.APINextAvailable.IsZero() {
		t.Fatalf("page = %+v", p)
	}
	a, b := p.Items[0], p.Items[1]
	if a.ID != "https://x/details/a" || a.Size != 123 || a.Attrs["category"] != "2000,2040" || a.Published.IsZero() {
		t.Fatalf("a = %+v", a)
	}
	// No guid at all: the link, with the key parameter masked.
	if b.ID != "https://x/getnzb/b?r=[key]" || b.Published.IsZero() {
		t.Fatalf("b = %+v", b)
	}
	c, err := parseCaps([]byte(fuzzCaps))
	if err != nil || c.MaxLimit != 100 || c.Limits.APIMax != 1000 {
		t.Fatalf("caps = %+v, %v", c, err)
	}
}

func FuzzParseDate(f *testing.F) {
	for _, s := range []string{
		"Mon, 02 Jan 2006 15:04:05 +0000", "Son, 03 Apr 2017 07:25:35 +0000", "3 Apr 2017 07:25:35",
		"Mon, 03 Apr 2017 03:25:35 EDT", "2017-04-03T09:25:35.250+02:00", "2017-04-03 07:25:35 UTC",
		"Monday, 03-Apr-17 07:25:35 GMT", "Mon Apr  3 07:25:35 2017", "Mon Apr 3 07:25:35 MST 2017",
		"31 Feb 2017 00:00:00", "1 Jan 2017 24:00", "2017-04-03", "Mar, 04 Apr 2017 10:00:00 GMT+2", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, ok := parseDate(s)
		if !ok {
			if !tm.IsZero() {
				t.Fatalf("parseDate(%q) failed but returned %v", s, tm)
			}
			return
		}
		if tm.Location() != time.UTC || tm.Year() < 1970 || tm.Year() > 9999 {
			t.Fatalf("parseDate(%q) = %v", s, tm)
		}
		_ = disabledUntil("Indexer is disabled till " + s + " due to recent failures.")
		_ = retryAfter(s, time.Unix(0, 0))
	})
}

func FuzzIdentity(f *testing.F) {
	for _, s := range []string{
		"https://x/getnzb/a.nzb?i=1&r=KEY", "http://127.0.0.1:9117/dl/t/?jackett_apikey=KEY&path=abc&file=x",
		"https://u:p@x/d?passkey=KEY#frag", "https://x/rss/download/1/KEY/a.torrent", "plain-guid-KEY", "%zz?apikey=1",
		"https://x/a?APIKEY=KEY&apikey", "magnet:?xt=urn:btih:abc&tr=http://t/announce?passkey=KEY",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, reason := identity("KEY", s)
		switch {
		case reason == "" && (id == "" || len(id) > maxIDLen || strings.Contains(id, "KEY")):
			t.Fatalf("identity(%q) = %q", s, id)
		case reason != "" && id != "":
			t.Fatalf("identity(%q) = %q with reason %q", s, id, reason)
		}
		if m := maskQuery(s); maskQuery(m) != m {
			t.Fatalf("maskQuery is not idempotent on %q: %q, then %q", s, m, maskQuery(m))
		}
	})
}
