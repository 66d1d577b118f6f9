package newznab

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/feed"
)

// Page is one page of search results.
type Page struct {
	// Items are the releases, in the indexer's order (newest first for an
	// empty query).
	Items []feed.Item
	// Offset and Total are what the indexer reported (newznab:response);
	// Total is -1 when it did not say.
	Offset, Total int
	// Limits are the API limits the indexer reported with the page, if
	// any.
	Limits APILimits
}

// APILimits are an account's limits as the indexer reports them
// (newznab:apilimits). Zero fields were not reported.
type APILimits struct {
	// Present is true when the indexer sent limits at all.
	Present bool
	// APICurrent and APIMax are the API requests used and allowed in the
	// indexer's current 24 hours.
	APICurrent, APIMax int64
	// GrabCurrent and GrabMax are the same for downloads.
	GrabCurrent, GrabMax int64
	// APINextAvailable is when the indexer says a request slot frees up.
	APINextAvailable time.Time
}

// Reached reports whether the indexer says no API request is left.
func (l APILimits) Reached() bool { return l.APIMax > 0 && l.APICurrent >= l.APIMax }

// maxAttrs bounds the attributes kept per item, so that a hostile or broken
// response cannot make one item enormous.
const maxAttrs = 64

type xmlAttrs struct {
	Attrs []xml.Attr `xml:",any,attr"`
}

// get returns an XML attribute by case-insensitive local name.
func (a xmlAttrs) get(name string) string {
	for _, at := range a.Attrs {
		if strings.EqualFold(at.Name.Local, name) {
			return at.Value
		}
	}
	return ""
}

type rssDoc struct {
	Channel struct {
		Response  *xmlAttrs `xml:"response"`
		APILimits *xmlAttrs `xml:"apilimits"`
		Items     []rssItem `xml:"item"`
	} `xml:"channel"`
}

type textElem struct {
	XMLName xml.Name
	Text    string `xml:",chardata"`
}

type rssItem struct {
	Title     string     `xml:"title"`
	GUID      string     `xml:"guid"`
	Links     []textElem `xml:"link"`
	Comments  string     `xml:"comments"`
	PubDate   string     `xml:"pubDate"`
	Category  []string   `xml:"category"`
	Enclosure []xmlAttrs `xml:"enclosure"`
	Size      string     `xml:"size"`
	Attrs     []xmlAttrs `xml:"attr"`
}

type errorDoc struct {
	xmlAttrs
}

// document decodes r, which may be an error document or the document of
// kind root ("rss" or "caps"), into v. An error document becomes *Error.
func document(r io.Reader, root string, v any) error {
	dec := xml.NewDecoder(r)
	dec.Strict = false
	dec.CharsetReader = charsetReader
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("the response is empty")
			}
			return fmt.Errorf("the response is not XML: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "error":
			var e errorDoc
			if err := dec.DecodeElement(&e, &se); err != nil {
				return fmt.Errorf("unreadable error document: %w", err)
			}
			code, _ := strconv.Atoi(strings.TrimSpace(e.get("code")))
			return newError(code, truncate(e.get("description"), 200))
		case root:
			if err := dec.DecodeElement(v, &se); err != nil {
				return fmt.Errorf("unreadable %s document: %w", root, err)
			}
			return nil
		default:
			return fmt.Errorf("the response is a <%s> document, not <%s>", truncate(se.Name.Local, 40), root)
		}
	}
}

// charsetReader accepts the encodings indexers declare for what is UTF-8 or
// ASCII in practice.
func charsetReader(charset string, input io.Reader) (io.Reader, error) {
	switch strings.ToLower(charset) {
	case "utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin1":
		return input, nil
	}
	return nil, fmt.Errorf("unsupported charset %q", truncate(charset, 40))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// parseSearch decodes a search response.
func parseSearch(r io.Reader) (Page, error) {
	var doc rssDoc
	if err := document(r, "rss", &doc); err != nil {
		return Page{}, err
	}
	p := Page{Total: -1}
	if resp := doc.Channel.Response; resp != nil {
		p.Offset, _ = strconv.Atoi(strings.TrimSpace(resp.get("offset")))
		if t, err := strconv.Atoi(strings.TrimSpace(resp.get("total"))); err == nil {
			p.Total = t
		}
	}
	if l := doc.Channel.APILimits; l != nil {
		p.Limits = parseLimits(*l)
	}
	p.Items = make([]feed.Item, 0, len(doc.Channel.Items))
	for _, ri := range doc.Channel.Items {
		if it, ok := ri.item(); ok {
			p.Items = append(p.Items, it)
		}
	}
	return p, nil
}

func parseLimits(a xmlAttrs) APILimits {
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(a.get(name)), 10, 64)
		return max(n, 0)
	}
	l := APILimits{
		Present:    true,
		APICurrent: num("apiCurrent"), APIMax: num("apiMax"),
		GrabCurrent: num("grabCurrent"), GrabMax: num("grabMax"),
	}
	if s := strings.TrimSpace(a.get("apiNextAvailable")); s != "" {
		l.APINextAvailable, _ = parseTime(s)
	}
	return l
}

// item converts one RSS item; ok is false for an item that has no usable id.
func (ri rssItem) item() (feed.Item, bool) {
	it := feed.Item{Title: strings.TrimSpace(ri.Title), Attrs: map[string]string{}}
	for _, a := range ri.Attrs {
		name := strings.ToLower(strings.TrimSpace(a.get("name")))
		if name == "" || len(it.Attrs) >= maxAttrs && it.Attrs[name] == "" {
			continue
		}
		v := strings.TrimSpace(a.get("value"))
		if prev, ok := it.Attrs[name]; ok && prev != "" {
			// Repeated attributes (several categories) are kept together.
			v = prev + "," + v
		}
		it.Attrs[name] = truncate(v, 2048)
	}
	var link string
	for _, l := range ri.Links {
		if l.XMLName.Space == "" {
			link = strings.TrimSpace(l.Text)
			break
		}
	}
	var enclosure string
	var enclosureLen int64
	if len(ri.Enclosure) > 0 {
		enclosure = strings.TrimSpace(ri.Enclosure[0].get("url"))
		enclosureLen, _ = strconv.ParseInt(strings.TrimSpace(ri.Enclosure[0].get("length")), 10, 64)
	}
	if link == "" {
		link = enclosure
	}
	if link != "" {
		it.Attrs["link"] = truncate(link, 2048)
	}
	if c := strings.TrimSpace(ri.Comments); c != "" {
		it.Attrs["comments"] = truncate(c, 2048)
	}
	if _, ok := it.Attrs["category"]; !ok && len(ri.Category) > 0 {
		it.Attrs["category"] = truncate(strings.TrimSpace(strings.Join(ri.Category, ",")), 2048)
	}

	it.ID = it.Attrs["guid"]
	if it.ID == "" {
		it.ID = strings.TrimSpace(ri.GUID)
	}
	if it.ID == "" {
		it.ID = withoutQuery(link)
	}
	if it.ID == "" || len(it.ID) > 1024 {
		return feed.Item{}, false
	}
	if _, ok := it.Attrs["guid"]; !ok {
		it.Attrs["guid"] = it.ID
	}

	for _, s := range []string{it.Attrs["size"], strings.TrimSpace(ri.Size)} {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			it.Size = n
			break
		}
	}
	if it.Size == 0 && enclosureLen > 0 {
		it.Size = enclosureLen
	}
	if t, ok := parseTime(ri.PubDate); ok {
		it.Published = t
	}
	if len(it.Attrs) == 0 {
		it.Attrs = nil
	}
	return it, true
}

// withoutQuery drops a link's query, which carries the API key on most
// indexers, leaving a stable identifier.
func withoutQuery(link string) string {
	u, err := url.Parse(link)
	if err != nil || u.Host == "" {
		return ""
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

// timeLayouts are the pubDate spellings seen from indexers: RFC 1123 with
// numeric or named zones, with or without the weekday, and ISO 8601.
var timeLayouts = []string{
	time.RFC1123Z,
	time.RFC1123,
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"2 Jan 2006 15:04:05 -0700",
	"02 Jan 2006 15:04:05 -0700",
	time.RFC3339,
	"2006-01-02 15:04:05",
}

func parseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
