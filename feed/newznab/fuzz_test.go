package newznab

import (
	"bytes"
	"errors"
	"testing"
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
		`<rss><channel><item><guid>` + string(bytes.Repeat([]byte("x"), 2000)) + `</guid></item></channel></rss>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseSearch(bytes.NewReader(data))
		if err != nil {
			var ie *Error
			if errors.As(err, &ie) && ie.kind == nil {
				t.Fatalf("error document without a kind: %+v", ie)
			}
			return
		}
		for _, it := range p.Items {
			if it.ID == "" || len(it.ID) > 1024 {
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
		c, err := parseCaps(bytes.NewReader(data))
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
	p, err := parseSearch(bytes.NewReader([]byte(fuzzRSS)))
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
	// No guid at all: the link without its query (which holds the key).
	if b.ID != "https://x/getnzb/b" || b.Published.IsZero() {
		t.Fatalf("b = %+v", b)
	}
	c, err := parseCaps(bytes.NewReader([]byte(fuzzCaps)))
	if err != nil || c.MaxLimit != 100 || c.Limits.APIMax != 1000 {
		t.Fatalf("caps = %+v, %v", c, err)
	}
}
