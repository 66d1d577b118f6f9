package transport

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/internal/hop"
)

// ProbeFunc returns a function for guard.Config.Probe that checks an
// endpoint with one request, HEAD <endpoint>/, through base: no body, no
// cookies (base is called directly, without an http.Client or its jar), no
// credentials (an endpoint key carries no userinfo), and no redirect
// followed. Any HTTP response, of any status, is an answer and returns
// nil. No response within timeout returns a timeout error, which the guard
// counts as the host not answering; other errors are returned as base
// gave them, and the guard classifies them (a TLS failure, for example, is
// inconclusive). When ctx is cancelled, ProbeFunc returns ctx's error,
// which says nothing about the host.
//
// A nil base means http.DefaultTransport. A *Transport as base is
// unwrapped to its own base, since a probe sent through the guard it works
// for would be refused. A zero timeout means DefaultHeaderTimeout; a
// negative one panics, as a programming error.
func ProbeFunc(base http.RoundTripper, timeout time.Duration) func(ctx context.Context, endpoint string) error {
	if timeout < 0 {
		panic(fmt.Sprintf("transport: ProbeFunc timeout is negative (%v)", timeout))
	}
	if timeout == 0 {
		timeout = DefaultHeaderTimeout
	}
	if t, ok := base.(*Transport); ok {
		base = t.base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return func(ctx context.Context, endpoint string) error {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(pctx, http.MethodHead, endpoint+"/", nil)
		if err != nil {
			return err
		}
		resp, err := base.RoundTrip(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pctx.Err() != nil {
				return &hop.TimeoutError{Endpoint: endpoint, After: timeout}
			}
			return err
		}
		if resp.Body != nil {
			resp.Body.Close()
		}
		return nil
	}
}
