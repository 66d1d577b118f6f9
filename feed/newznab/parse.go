package newznab

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hostguard/hostguard/feed"
)

// Page is one page of search results.
type Page struct {
	// Items are the releases, in the indexer's order (newest first for an
	// empty query), without the skipped ones.
	Items []feed.Item
	// Offset and Total are what the indexer reported (newznab:response);
	// Total is -1 when it did not say.
	Offset, Total int
	// Limits are the API limits the indexer reported with the page, if
	// any.
	Limits APILimits
	// Skipped are the items the page held but Items leaves out, because
	// they could not be identified: never dropped without a trace.
	Skipped []Skip
	// BadDates counts items whose publish date was present but not
	// readable; their Published is zero.
	BadDates int
	// Conflicts are attributes an item sent more than once with different
	// values (the first value is kept). The same value sent twice, as
	// feeds that send every attribute both as newznab:attr and as
	// torznab:attr do, is one value and no conflict.
	Conflicts []Conflict

	// all is every item in page order, skipped ones included (with an
	// empty ID), for Client.Page: a feed.Syncer counts offsets by them.
	all []feed.Item
}

// Skip is an item left out of a page.
type Skip struct {
	// Index is the item's position among the page's items as sent.
	Index int
	// Title is the item's title, as far as it had one.
	Title string
	// Reason is SkipNoIdentity or SkipLongIdentity.
	Reason string
}

// Conflict is an attribute sent twice with different values.
type Conflict struct {
	// Index is the item's position among the page's items as sent.
	Index int
	// Name is the attribute's name (lower case).
	Name string
	// Kept is the value kept (the first), Dropped the other one; both
	// are truncated to 200 bytes, with the API key masked.
	Kept, Dropped string
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

// document decodes data, which may be an error document (XML, or JSON as
// some proxies answer) or the XML document of kind root ("rss" or
// "caps"), into v. An error document becomes *Error.
func document(data []byte, root string, v any) error {
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return jsonDocument(t, root)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
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

// jsonDocument reads a JSON answer, which the client never asks for, so it
// is an error from a proxy or an indexer that answers errors in JSON:
// {"code":"100","description":".."} (NZBHydra2), the same under "error",
// under "error"."@attributes" (Newznab's own JSON output), or an "error"
// or "message" string.
func jsonDocument(data []byte, root string) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("the response is not XML, and not JSON either: %w", err)
	}
	for _, obj := range []map[string]json.RawMessage{doc, sub(doc, "error"), sub(sub(doc, "error"), "@attributes"), sub(doc, "@attributes")} {
		code, okCode := jsonScalar(obj["code"])
		desc, okDesc := jsonScalar(obj["description"])
		if okCode || okDesc {
			n, _ := strconv.Atoi(strings.TrimSpace(code))
			return newError(n, truncate(desc, 200))
		}
	}
	for _, k := range []string{"error", "message"} {
		if msg, ok := jsonScalar(doc[k]); ok && msg != "" {
			return newError(0, truncate(msg, 200))
		}
	}
	return fmt.Errorf("the response is a JSON document, not <%s>", root)
}

func sub(m map[string]json.RawMessage, key string) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	if raw, ok := m[key]; ok {
		_ = json.Unmarshal(raw, &out)
	}
	return out
}

// jsonScalar reads a JSON string or number as text.
func jsonScalar(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	return "", false
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
	// Cut on a rune boundary, so that a truncated value stays UTF-8.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// parseSearch decodes a search response; key is the account's key, masked
// in identities and conflicts.
func parseSearch(data []byte, key string) (Page, error) {
	var doc rssDoc
	if err := document(data, "rss", &doc); err != nil {
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
	p.all = make([]feed.Item, 0, len(doc.Channel.Items))
	for i, ri := range doc.Channel.Items {
		it := ri.item(i, key, &p)
		p.all = append(p.all, it)
		if it.ID == "" {
			p.Skipped = append(p.Skipped, Skip{Index: i, Title: it.Title, Reason: it.Skip})
			continue
		}
		p.Items = append(p.Items, it)
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
		l.APINextAvailable, _ = parseDate(s)
	}
	return l
}

// multiValued are the attributes an item may legitimately send several
// times with different values: they are kept as a set, joined by commas
// in the order first sent.
var multiValued = map[string]bool{"category": true, "tag": true}

// item converts the i-th RSS item. An item that cannot be identified comes
// back with an empty ID and Skip set; what the page learns on the way
// (conflicting attributes, unreadable dates) goes to p.
func (ri rssItem) item(i int, key string, p *Page) feed.Item {
	it := feed.Item{Title: truncate(strings.TrimSpace(ri.Title), 1024), Attrs: map[string]string{}}
	for _, a := range ri.Attrs {
		name := strings.ToLower(strings.TrimSpace(a.get("name")))
		if name == "" {
			continue
		}
		v := truncate(strings.TrimSpace(a.get("value")), 2048)
		prev, seen := it.Attrs[name]
		switch {
		case !seen:
			if len(it.Attrs) < maxAttrs {
				it.Attrs[name] = v
			}
		case prev == v:
		case multiValued[name]:
			if v != "" && !containsValue(prev, v) {
				it.Attrs[name] = truncate(prev+","+v, 2048)
			}
		default:
			p.Conflicts = append(p.Conflicts, Conflict{
				Index: i, Name: truncate(name, 64),
				Kept: truncate(maskKey(maskQuery(prev), key), 200), Dropped: truncate(maskKey(maskQuery(v), key), 200),
			})
		}
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
	if dl := link; dl != "" || enclosure != "" {
		if dl == "" {
			dl = enclosure
		}
		it.Attrs["link"] = truncate(dl, 2048)
	}
	if c := strings.TrimSpace(ri.Comments); c != "" {
		it.Attrs["comments"] = truncate(c, 2048)
	}
	if _, ok := it.Attrs["category"]; !ok && len(ri.Category) > 0 {
		var cats []string
		for _, c := range ri.Category {
			if c = strings.TrimSpace(c); c != "" && !slices.Contains(cats, c) {
				cats = append(cats, c)
			}
		}
		if len(cats) > 0 {
			it.Attrs["category"] = truncate(strings.Join(cats, ","), 2048)
		}
	}

	it.ID, it.Skip = identity(key, it.Attrs["guid"], ri.GUID, link, enclosure)
	if _, ok := it.Attrs["guid"]; !ok && it.ID != "" {
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
	if d := strings.TrimSpace(ri.PubDate); d != "" {
		if t, ok := parseDate(d); ok {
			it.Published = t
		} else {
			p.BadDates++
		}
	}
	if len(it.Attrs) == 0 || it.ID == "" {
		// A skipped item is a placeholder: nothing of it is handed out.
		it.Attrs = nil
	}
	return it
}

// containsValue reports whether the comma-joined set holds v.
func containsValue(set, v string) bool {
	for s := range strings.SplitSeq(set, ",") {
		if s == v {
			return true
		}
	}
	return false
}
