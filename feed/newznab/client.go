package newznab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/transport"
)

// Defaults for the zero fields of Config.
const (
	DefaultPageSize         = 100
	DefaultMaxResponseBytes = 8 << 20
	DefaultUserAgent        = "hostguard"
)

// MaxRedirects is how many redirects within the indexer's origin one
// request follows.
const MaxRedirects = 3

// Budget is what the client tells a budget (*budget.Budget implements
// it): the daily limit the indexer reports, and that the limit is reached.
type Budget interface {
	ReportLimit(ctx context.Context, source string, n int64) error
	// MarkExhausted marks source exhausted until until; zero means the
	// end of the UTC day.
	MarkExhausted(ctx context.Context, source string, until time.Time) error
}

// Config configures a Client.
type Config struct {
	// URL is the indexer's API endpoint, such as
	// https://indexer.example/api or a Torznab endpoint ending in
	// /api. Required; http or https. An apikey in its query is taken as
	// the APIKey (and must then not be given twice).
	URL string
	// APIKey is the account's key, sent as the apikey parameter. Default
	// (empty): none, for indexers that need no key.
	APIKey string
	// Name names the indexer as a budget source. Default (empty): the
	// URL's host.
	Name string
	// HTTPClient sends the requests. Default (nil): a client over
	// transport.New with its defaults, so that a dead indexer fails fast
	// and a stalled one times out. Whatever client is given, the Client
	// follows redirects only within the URL's origin, at most
	// MaxRedirects of them, and sends no Referer (see checkRedirect); the
	// client's own CheckRedirect, if any, is asked after that.
	HTTPClient *http.Client
	// PageSize is how many items Page asks for. It is lowered to the
	// indexer's reported maximum. Default (zero) 100; negative: Page sends
	// no limit and gets the indexer's default page size.
	PageSize int
	// Categories restrict Page (and Search without its own categories) to
	// these category ids. Default (nil): every category.
	Categories []int
	// Budget, when set, hears the indexer's reported daily limit and is
	// told when the indexer says the limit is reached. Default (nil): not
	// told.
	Budget Budget
	// MaxResponseBytes bounds one response body. Default (zero) 8 MiB;
	// it must not be negative.
	MaxResponseBytes int64
	// UserAgent is sent with each request. Default (empty) "hostguard".
	UserAgent string
	// Now is the clock for reading Retry-After. Default (nil) time.Now.
	Now func() time.Time
}

// Client talks to one Newznab or Torznab indexer. It is safe for
// concurrent use. It implements feed.Source through Page.
type Client struct {
	cfg  Config
	base *url.URL // without the key
	safe string   // scheme://host/path, for error messages

	mu       sync.Mutex
	caps     *Caps
	reported int64 // the last API limit reported to the budget
}

// New returns a client for cfg. A bad field is an *InputError naming it;
// no error quotes the URL, which may carry the key.
func New(cfg Config) (*Client, error) {
	bad := func(field, reason string) (*Client, error) {
		return nil, &InputError{Field: field, Reason: reason}
	}
	if strings.TrimSpace(cfg.URL) == "" {
		return bad("url", "is empty")
	}
	u, err := url.Parse(strings.TrimSpace(cfg.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("url", "is not an http or https URL with a host")
	}
	if u.User != nil {
		return bad("url", "must not carry user:password; put the key in api_key")
	}
	q := u.Query()
	if k := q.Get("apikey"); k != "" {
		if cfg.APIKey != "" && cfg.APIKey != k {
			return bad("url", "carries an apikey different from api_key")
		}
		cfg.APIKey = k
		q.Del("apikey")
		u.RawQuery = q.Encode()
	}
	if cfg.MaxResponseBytes < 0 {
		return bad("max_response_bytes", fmt.Sprintf("is %d; want 0 (default %d) or more", cfg.MaxResponseBytes, DefaultMaxResponseBytes))
	}
	for i, c := range cfg.Categories {
		if c < 0 {
			return bad(fmt.Sprintf("categories[%d]", i), fmt.Sprintf("is %d; category ids are not negative", c))
		}
	}
	if cfg.Name == "" {
		cfg.Name = u.Host
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: transport.New(transport.Config{})}
	}
	hc := *cfg.HTTPClient
	hc.CheckRedirect = checkRedirect(cfg.HTTPClient.CheckRedirect)
	cfg.HTTPClient = &hc
	safe := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return &Client{cfg: cfg, base: u, safe: safe.String()}, nil
}

// Name is the indexer's source name (Config.Name).
func (c *Client) Name() string { return c.cfg.Name }

// Caps asks the indexer for its capabilities. A successful answer is kept
// and used by Page to size its requests; call Caps again to refresh it.
// Reported API limits go to Config.Budget. The request carries an
// admission as a search (see admitted).
func (c *Client) Caps(ctx context.Context) (Caps, error) {
	var caps Caps
	err := c.do(c.admitted(ctx), url.Values{"t": {"caps"}}, func(data []byte) error {
		var err error
		caps, err = parseCaps(data)
		return err
	})
	if err != nil {
		return Caps{}, err
	}
	c.mu.Lock()
	c.caps = &caps
	c.mu.Unlock()
	c.noteLimits(ctx, caps.Limits)
	return caps, nil
}

// SearchParams is the input of Search.
type SearchParams struct {
	// Query is the search text; empty lists the newest releases.
	Query string
	// Offset is the number of results to skip.
	Offset int
	// Limit is the page size; zero leaves it to the indexer. It must not
	// exceed the indexer's maximum (see Caps).
	Limit int
	// Categories restrict the search; nil means Config.Categories.
	Categories []int
}

// Search runs t=search. Bad params are an *InputError. The page's Skipped,
// BadDates and Conflicts say what could not be read as sent. The request
// carries an admission as a search (see admitted).
func (c *Client) Search(ctx context.Context, p SearchParams) (Page, error) {
	return c.search(c.admitted(ctx), p)
}

// admitted returns ctx carrying an admission of a search on the client's
// source (transport.WithAdmission), unless it carries one already: a
// transport with a Budget admits the request before any network work, as
// every request to the indexer must be. Page's requests carry none, because
// the feed.Syncer that asks for pages admits each one itself.
func (c *Client) admitted(ctx context.Context) context.Context {
	if _, ok := transport.AdmissionFrom(ctx); ok {
		return ctx
	}
	return transport.WithAdmission(ctx, budget.AdmitParams{Source: c.cfg.Name, Kind: budget.KindSearch})
}

func (c *Client) search(ctx context.Context, p SearchParams) (Page, error) {
	if p.Offset < 0 {
		return Page{}, &InputError{Field: "offset", Reason: fmt.Sprintf("is %d; want 0 or more", p.Offset)}
	}
	if p.Limit < 0 {
		return Page{}, &InputError{Field: "limit", Reason: fmt.Sprintf("is %d; want 0 (the indexer's default) or more", p.Limit)}
	}
	for i, id := range p.Categories {
		if id < 0 {
			return Page{}, &InputError{Field: fmt.Sprintf("categories[%d]", i), Reason: fmt.Sprintf("is %d; category ids are not negative", id)}
		}
	}
	q := url.Values{"t": {"search"}, "q": {p.Query}, "extended": {"1"}}
	if p.Offset > 0 {
		q.Set("offset", strconv.Itoa(p.Offset))
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	cats := p.Categories
	if cats == nil {
		cats = c.cfg.Categories
	}
	if len(cats) > 0 {
		s := make([]string, len(cats))
		for i, id := range cats {
			s[i] = strconv.Itoa(id)
		}
		q.Set("cat", strings.Join(s, ","))
	}
	var page Page
	err := c.do(ctx, q, func(data []byte) error {
		var err error
		page, err = parseSearch(data, c.cfg.APIKey)
		return err
	})
	if err != nil {
		return Page{}, err
	}
	c.noteLimits(ctx, page.Limits)
	return page, nil
}

// Page implements feed.Source: the newest releases from offset, in pages of
// Config.PageSize lowered to the indexer's maximum. The first call reads
// caps once to learn that maximum (an indexer that rejects t=caps is then
// searched with Config.PageSize as it is, and so is one whose caps request
// the budget refuses for now). The caps request is admitted as a search;
// the page requests carry no admission, because the Syncer admits each
// page (as a head poll or a gap page) before it asks for it.
//
// Items that cannot be identified keep their place in the page with an
// empty ID and feed.Item.Skip saying why, so that the Syncer counts offsets
// right and reports them (feed.Result.Skipped).
func (c *Client) Page(ctx context.Context, offset int) ([]feed.Item, error) {
	limit, err := c.pageSize(ctx)
	if err != nil {
		return nil, err
	}
	p, err := c.search(ctx, SearchParams{Offset: offset, Limit: limit})
	if err != nil {
		return nil, err
	}
	return p.all, nil
}

func (c *Client) pageSize(ctx context.Context) (int, error) {
	c.mu.Lock()
	caps := c.caps
	c.mu.Unlock()
	if caps == nil {
		got, err := c.Caps(ctx)
		switch {
		case errors.Is(err, ErrRequest):
			// The indexer does not offer caps: search without knowing its
			// maximum, and do not ask again.
			got = Caps{Search: true}
			c.mu.Lock()
			c.caps = &got
			c.mu.Unlock()
		case notAdmitted(err):
			// The budget has no room for caps now; the page itself was
			// admitted. Search with Config.PageSize, and ask again later.
			got = Caps{Search: true}
		case err != nil:
			return 0, err
		}
		caps = &got
	}
	n := max(c.cfg.PageSize, 0)
	if caps.MaxLimit > 0 && n > caps.MaxLimit {
		n = caps.MaxLimit
	}
	return n, nil
}

// notAdmitted reports whether err is a budget's refusal.
func notAdmitted(err error) bool {
	return errors.Is(err, budget.ErrExhausted) || errors.Is(err, budget.ErrPaced) ||
		errors.Is(err, budget.ErrPaused) || errors.Is(err, budget.ErrDisabled)
}

// noteLimits passes the indexer's own view of its limits to the budget.
func (c *Client) noteLimits(ctx context.Context, l APILimits) {
	if c.cfg.Budget == nil || !l.Present {
		return
	}
	if l.APIMax > 0 {
		c.mu.Lock()
		changed := c.reported != l.APIMax
		c.reported = l.APIMax
		c.mu.Unlock()
		if changed {
			_ = c.cfg.Budget.ReportLimit(ctx, c.cfg.Name, l.APIMax)
		}
	}
	if l.Reached() {
		_ = c.cfg.Budget.MarkExhausted(ctx, c.cfg.Name, time.Time{})
	}
}

// do sends one API request with q (plus the key) and hands the body to
// parse. Every error it returns is free of the key.
func (c *Client) do(ctx context.Context, q url.Values, parse func([]byte) error) error {
	err := c.roundTrip(ctx, q, parse)
	if err == nil {
		return nil
	}
	if c.cfg.Budget != nil && errors.Is(err, feed.ErrSourceExhausted) {
		// The indexer's own refusal: until the time it said (a
		// temporary one), else the end of the day (its daily limit).
		var until time.Time
		var ra feed.RetryAter
		if errors.As(err, &ra) && ra.RetryAt().After(c.cfg.Now()) {
			until = ra.RetryAt()
		}
		_ = c.cfg.Budget.MarkExhausted(ctx, c.cfg.Name, until)
	}
	return &masked{err: err, key: c.cfg.APIKey}
}

func (c *Client) roundTrip(ctx context.Context, q url.Values, parse func([]byte) error) error {
	what := c.safe + "?t=" + q.Get("t")
	if o := q.Get("offset"); o != "" {
		what += "&offset=" + o
	}
	u := *c.base
	all := u.Query()
	for k, vs := range q {
		all[k] = vs
	}
	if c.cfg.APIKey != "" {
		all.Set("apikey", c.cfg.APIKey)
	}
	u.RawQuery = all.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("newznab: %s: %w", what, err)
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	req.Header.Set("Accept", "application/rss+xml, application/xml, text/xml")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		// *url.Error quotes the full URL, key included: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("newznab: %s: %w", what, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1)
	data, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("newznab: %s: read the response: %w", what, err)
	}
	if int64(len(data)) > c.cfg.MaxResponseBytes {
		return fmt.Errorf("newznab: %s: the response exceeds %d bytes", what, c.cfg.MaxResponseBytes)
	}
	// An error document is read whatever the status: proxies send theirs
	// with 429 or 410, most indexers with 200.
	perr := parse(data)
	var ie *Error
	if errors.As(perr, &ie) {
		ie.Description = maskKey(ie.Description, c.cfg.APIKey)
		ie.settle(resp.StatusCode, resp.Header.Get("Retry-After"), c.cfg.Now())
		return fmt.Errorf("newznab: %s: %w", what, ie)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("newznab: %s: %w", what, &StatusError{
			Status: resp.StatusCode, Until: retryAfter(resp.Header.Get("Retry-After"), c.cfg.Now()),
		})
	}
	if perr != nil {
		return fmt.Errorf("newznab: %s: %w", what, perr)
	}
	return nil
}

// checkRedirect is the client's redirect policy. Every request carries
// the key in its query, and an indexer (or whoever answers in its name)
// must not be able to steer it elsewhere: a redirect to another origin
// (scheme, host or port) is refused before anything is sent there, and
// no hop carries a Referer, which Go's client would fill with the
// previous URL, key included. then is the caller's own CheckRedirect.
func checkRedirect(then func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		req.Header.Del("Referer")
		from := via[0].URL
		if origin(req.URL) != origin(from) {
			return &RedirectError{To: safeURL(req.URL), Origin: origin(from)}
		}
		if len(via) > MaxRedirects {
			return &RedirectError{To: safeURL(req.URL), Origin: origin(from), TooMany: true}
		}
		if then != nil {
			return then(req, via)
		}
		return nil
	}
}

// origin is u's scheme://host:port, the port spelled out.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// safeURL is u without user:password and query: nothing secret.
func safeURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
