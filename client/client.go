package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hostguard/hostguard/api"
)

// DefaultAddr is where `hostguard serve` listens with no flags.
const DefaultAddr = "http://127.0.0.1:7411"

// maxAnswer bounds an answer read into memory; the largest the daemon
// writes (a page of items, the status report) are far smaller.
const maxAnswer = 64 << 20

// Config says which daemon to call and how.
type Config struct {
	// Addr is the daemon's base URL (http:// or https://, optionally with
	// a path prefix), or host:port for http. Empty means DefaultAddr. It
	// must not carry credentials: give Token.
	Addr string
	// Token is the daemon's bearer token; empty sends none.
	Token string
	// HTTPClient sends the requests. Nil means a client that goes
	// through no proxy, follows no redirect and sets no timeout (every
	// call's context bounds it).
	HTTPClient *http.Client
}

// Client calls one daemon. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
	now   func() time.Time

	// The daemon's capabilities, grouped as its routes are.
	Items    *Items
	Guard    *Guard
	Hosts    *Hosts
	Budget   *Budget
	Feeds    *Feeds
	Evidence *Evidence
}

// New returns a client of the daemon cfg names, or an error naming what
// is wrong with cfg. It does not contact the daemon.
func New(cfg Config) (*Client, error) {
	raw := strings.TrimSpace(cfg.Addr)
	if raw == "" {
		raw = DefaultAddr
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("client: address %q is not an http:// or https:// address of the daemon", cfg.Addr)
	}
	if u.User != nil {
		return nil, errors.New("client: the address must not carry credentials; pass the token on its own")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("client: the address must not carry a query or a fragment")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		hc = &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	c := &Client{base: strings.TrimSuffix(u.String(), "/"), token: cfg.Token, hc: hc, now: time.Now}
	c.Items, c.Guard, c.Hosts = &Items{c}, &Guard{c}, &Hosts{c}
	c.Budget, c.Feeds, c.Evidence = &Budget{c}, &Feeds{c}, &Evidence{c}
	return c, nil
}

// Do sends one request to the daemon and returns the answer's bytes:
// the way to a route this package has no method for, and to an answer as
// it came. path is the route with its segments escaped (PathEscape);
// in, when not nil, is sent as JSON. A refusal is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, in any) ([]byte, error) {
	return c.send(ctx, method, path, query, in, routePlain)
}

// call is Do for the methods: it decodes the answer into out, when out is
// not nil.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any, rt route) error {
	b, err := c.send(ctx, method, path, query, in, rt)
	if err != nil || out == nil || len(b) == 0 {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("client: the daemon's answer to %s %s is not the JSON expected: %w", method, path, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, query url.Values, in any, rt route) ([]byte, error) {
	// path arrives with its segments already escaped (an item id may hold
	// a slash), so the URL is built as text rather than through url.URL.
	target := c.base + path
	if q := query.Encode(); q != "" {
		target += "?" + q
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// The url.Error names the daemon's address, which carries no
		// credentials (New refuses them), so it may be shown.
		return nil, &Error{Code: CodeUnreachable, err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, &Error{Code: CodeUnreachable, err: fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, errorFrom(resp, b, rt, c.now())
	}
	return b, nil
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// Healthz is GET /healthz: whether the daemon is up. It needs no token.
func (c *Client) Healthz(ctx context.Context) error {
	_, err := c.send(ctx, http.MethodGet, "/healthz", nil, nil, routePlain)
	return err
}

// Status is GET /v1/status: the figures the dashboard shows.
func (c *Client) Status(ctx context.Context) (api.Status, error) {
	var res api.Status
	err := c.call(ctx, http.MethodGet, "/v1/status", nil, nil, &res, routePlain)
	return res, err
}

// Leader is GET /v1/leader: whether this daemon runs the periodic work.
func (c *Client) Leader(ctx context.Context) (api.Leader, error) {
	var res api.Leader
	err := c.call(ctx, http.MethodGet, "/v1/leader", nil, nil, &res, routePlain)
	return res, err
}
