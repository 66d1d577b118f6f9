package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/internal/sflist"
)

// FetchParams qualify a Fetch; the zero value is a plain GET.
type FetchParams struct {
	// Method is GET (empty) or POST, the two the fetch route takes.
	Method string
	// Body is what a POST sends upstream.
	Body []byte
	// Header goes upstream with the request, its end-to-end fields.
	Header http.Header
	// Exempt takes a ticket that never waits for a trial (see
	// Guard.Acquire).
	Exempt bool
	// Timeout is the daemon's header timeout for this request (the
	// fetch route's timeout hint); 0 leaves the daemon's own. The call's
	// context bounds the whole wait.
	Timeout time.Duration
}

// Fetch sends one request through the daemon's guard (GET or POST
// /v1/fetch) and returns the upstream's answer, whatever its status; the
// caller closes its body. When no upstream answer came, the daemon's own
// answer is an *Error: CodeFastFail (the endpoint is open; nothing was
// sent), CodePolicyRefused, or CodeUpstreamFailed with the failure class
// in Body.Class. The daemon's answers are told from an upstream's by
// their Proxy-Status header naming hostguard with an error (RFC 9209),
// never by their text.
func (c *Client) Fetch(ctx context.Context, target string, p FetchParams) (*http.Response, error) {
	method := p.Method
	if method == "" {
		method = http.MethodGet
	}
	if method != http.MethodGet && method != http.MethodPost {
		return nil, errors.New("client: the fetch route takes GET or POST, not " + method)
	}
	q := url.Values{"url": {target}}
	if p.Exempt {
		q.Set("exempt", "1")
	}
	if p.Timeout > 0 {
		q.Set("timeout", strconv.FormatFloat(p.Timeout.Seconds(), 'f', -1, 64))
	}
	var body io.Reader
	if method == http.MethodPost {
		body = bytes.NewReader(p.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/v1/fetch?"+q.Encode(), body)
	if err != nil {
		return nil, err
	}
	for k, vs := range p.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, &Error{Code: CodeUnreachable, err: err}
	}
	proxyError := daemonError(resp.Header.Values("Proxy-Status"))
	if resp.StatusCode < 400 || proxyError == "" {
		return resp, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, &Error{Code: CodeUnreachable, err: err}
	}
	e := errorFrom(resp, b, routeFetch, c.now())
	e.ProxyError = proxyError
	return nil, e
}

// daemonError returns the error type of the hostguard member of a
// Proxy-Status field (RFC 9209), "" when there is none: an upstream's own
// answer passes through without one. It reads the field as the daemon
// does when it strips an upstream's hostguard members (internal/sflist).
func daemonError(fields []string) string {
	members, _ := sflist.Members(strings.Join(fields, ","))
	for _, m := range members {
		if strings.EqualFold(sflist.Name(m), "hostguard") {
			v, _ := sflist.Param(m, "error")
			return v
		}
	}
	return ""
}
