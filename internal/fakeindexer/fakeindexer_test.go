package fakeindexer_test

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/fakeindexer"
)

type rss struct {
	Items []struct {
		Title string `xml:"title"`
		GUID  string `xml:"guid"`
		Attrs []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"attr"`
	} `xml:"channel>item"`
}

func get(t *testing.T, x *fakeindexer.Indexer, q url.Values) string {
	t.Helper()
	resp, err := http.Get(x.URL() + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func search(t *testing.T, x *fakeindexer.Indexer, key string, offset string) rss {
	t.Helper()
	body := get(t, x, url.Values{"t": {"search"}, "apikey": {key}, "offset": {offset}, "limit": {"2"}})
	var r rss
	if err := xml.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return r
}

func TestSearchPagesNewestFirstAndCounts(t *testing.T) {
	t.Parallel()
	x := fakeindexer.New(fakeindexer.Options{APIKey: "k"})
	t.Cleanup(x.Close)
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	rels := x.PublishEvery(3, at, time.Minute)
	if x.Len() != 3 || rels[0].GUID == rels[2].GUID || !rels[0].Published.Equal(at) || !rels[2].Published.Equal(at.Add(2*time.Minute)) {
		t.Fatalf("published %+v", rels)
	}
	first, second := search(t, x, "k", "0"), search(t, x, "k", "2")
	if len(first.Items) != 2 || first.Items[0].Title != rels[2].Title || first.Items[1].Title != rels[1].Title {
		t.Fatalf("first page: %+v", first.Items)
	}
	if len(second.Items) != 1 || second.Items[0].Title != rels[0].Title {
		t.Fatalf("second page: %+v", second.Items)
	}
	if body := get(t, x, url.Values{"t": {"search"}, "apikey": {"wrong"}}); !strings.Contains(body, `code="100"`) {
		t.Fatalf("a wrong key: %s", body)
	}
	get(t, x, url.Values{"t": {"caps"}})
	if n, c := x.Count("search"), x.Count("caps"); n != 3 || c != 1 {
		t.Fatalf("counted %d searches and %d caps, want 3 and 1", n, c)
	}
}

func TestKeyInGUID(t *testing.T) {
	t.Parallel()
	for _, keyInGUID := range []bool{false, true} {
		x := fakeindexer.New(fakeindexer.Options{KeyInGUID: keyInGUID})
		t.Cleanup(x.Close)
		rel := x.Publish(1, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))[0]
		it := search(t, x, "s3cret", "0").Items[0]
		wantGUID := x.URL()[:len(x.URL())-len("/api")] + "/details/" + rel.GUID
		if keyInGUID {
			wantGUID += "?apikey=s3cret"
		}
		var guidAttr string
		for _, a := range it.Attrs {
			if a.Name == "guid" {
				guidAttr = a.Value
			}
		}
		if it.GUID != wantGUID || (guidAttr == "") != keyInGUID || (!keyInGUID && guidAttr != rel.GUID) {
			t.Errorf("KeyInGUID %v: guid %q, guid attr %q; want guid %q", keyInGUID, it.GUID, guidAttr, wantGUID)
		}
	}
}

func TestFaultsWithStatusAndUnidentifiedReleases(t *testing.T) {
	x := fakeindexer.New(fakeindexer.Options{})
	defer x.Close()
	x.Publish(1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	x.PublishUnidentified(1, time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC))
	x.Fail(fakeindexer.Fault{Offset: -1, Status: 429, Code: 429, Description: "Indexer is disabled till later", RetryAfter: "60"})
	resp, err := http.Get(x.URL() + "?t=search")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" || !strings.Contains(string(body), `<error code="429" description="Indexer is disabled till later"/>`) {
		t.Fatalf("fault answer %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, err = http.Get(x.URL() + "?t=search")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	items := strings.Split(string(body), "<item>")
	if len(items) != 3 || strings.Contains(items[1], "<guid") || strings.Contains(items[1], "<link") || !strings.Contains(items[2], "<guid") {
		t.Fatalf("search with an unidentified release first:\n%s", body)
	}
}
