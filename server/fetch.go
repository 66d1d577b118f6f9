package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/server/internal/proxystatus"
	"github.com/hostguard/hostguard/server/internal/upstream"
)

// fetch performs one request through the guarded transport and streams the
// answer back: status, end-to-end headers and body. Redirects are returned,
// not followed, so the caller sees what the upstream said.
//
// The upstream URL is exactly the value of the url query parameter. The
// route's own parameters (url, exempt) belong to the daemon's URL and are
// never sent upstream; a parameter meant for the upstream must be inside
// the url value, percent-encoded. Any other parameter on the daemon's URL
// is refused, because it is almost always an unencoded upstream URL whose
// query was split off by '&'.
func (s *Server) fetch(w http.ResponseWriter, r *http.Request) error {
	target, h, err := fetchParams(r.URL.RawQuery)
	if err != nil {
		return err
	}
	if err := s.precheckURL(target); err != nil {
		return s.refusedTarget(err, "fetch")
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target, nil)
	if err != nil {
		return badRequest("url", "url cannot be requested: %s", failureText(err))
	}
	if r.Method == http.MethodPost && r.ContentLength != 0 {
		out.ContentLength = r.ContentLength
		out.Body = &clientBody{r: r.Body, rc: http.NewResponseController(w), idle: s.cfg.IdleTimeout}
	}
	forwardHeaders(out.Header, r.Header)
	if s.token.set {
		// The client's Authorization header was for the daemon.
		out.Header.Del("Authorization")
	}
	resp, err := s.forward(out, h)
	if err != nil {
		return s.upstreamError(err, "fetch")
	}
	s.metrics.upstream.WithLabelValues("fetch", "answered").Inc()
	streamResponse(w, resp)
	return nil
}

// fetchParams reads the fetch route's query: url (required, once),
// exempt and timeout (optional; the same hints as the proxy's headers).
func fetchParams(rawQuery string) (target string, h hints, err error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", h, badRequest("", "the query string is malformed; percent-encode the upstream URL in the url parameter")
	}
	for k := range q {
		if k != "url" && k != "exempt" && k != "timeout" {
			return "", h, badRequest(k, "unknown query parameter %q: only url, exempt and timeout are read, so percent-encode the upstream URL (its own query included) in url", k)
		}
	}
	switch len(q["url"]) {
	case 0:
		return "", h, badRequest("url", "url is missing: /v1/fetch?url=<percent-encoded upstream URL>")
	case 1:
	default:
		return "", h, badRequest("url", "url is given more than once")
	}
	target = q.Get("url")
	if err := checkUpstreamURL("url", target); err != nil {
		return "", h, err
	}
	switch v := q["exempt"]; {
	case len(v) == 0:
	case len(v) > 1:
		return "", h, badRequest("exempt", "exempt is given more than once")
	case v[0] == "":
	default:
		if h.exempt, err = hintBool("exempt", v[0]); err != nil {
			return "", h, err
		}
	}
	switch v := q["timeout"]; {
	case len(v) == 0:
	case len(v) > 1:
		return "", h, badRequest("timeout", "timeout is given more than once")
	default:
		if h.timeout, err = hintSeconds("timeout", v[0]); err != nil {
			return "", h, err
		}
	}
	return target, h, nil
}

// checkUpstreamURL accepts absolute http and https URLs with a host.
func checkUpstreamURL(field, raw string) error {
	if err := checkURLField(field, raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return badRequest(field, "%s is not a URL", field)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return badRequest(field, "%s must be an http or https URL", field)
	}
	if u.Hostname() == "" {
		return badRequest(field, "%s has no host", field)
	}
	return nil
}

// refusedTarget answers a precheck's refusal: a bad destination as it
// came, a policy refusal counted as one.
func (s *Server) refusedTarget(err error, via string) error {
	if _, bad := errors.AsType[*apiError](err); bad {
		return err
	}
	return s.upstreamError(err, via)
}

// upstreamError counts a request that got no upstream response by what
// stopped it, and returns the error to answer: a fast-fail, a policy
// refusal, or an upstream failure named by its class alone.
func (s *Server) upstreamError(err error, via string) error {
	if gaveUp(err) {
		s.metrics.upstream.WithLabelValues(via, "gave_up").Inc()
		return &upstreamError{err: err}
	}
	if errors.Is(err, guard.ErrOpen) {
		s.metrics.upstream.WithLabelValues(via, "fast_fail").Inc()
		return s.guardError(err, via)
	}
	if _, ok := errors.AsType[*failure.PolicyError](err); ok {
		s.metrics.upstream.WithLabelValues(via, "policy").Inc()
		return err
	}
	s.metrics.upstream.WithLabelValues(via, failure.Classify(err).String()).Inc()
	return &upstreamError{err: err}
}

// streamResponse copies resp to w as it arrives, flushing after every read
// so that a slow or endless body reaches the client as it comes. If the
// upstream body fails midway the client connection is aborted: ending the
// response cleanly would present a truncated body as a whole one.
func streamResponse(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	upstream.CopyEndToEnd(w.Header(), resp.Header)
	proxystatus.DropOwn(w.Header())
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	bp := getCopyBuf()
	defer putCopyBuf(bp)
	buf := *bp
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if rerr == io.EOF {
			return
		}
		if rerr != nil {
			if errors.Is(rerr, context.Canceled) {
				return
			}
			panic(http.ErrAbortHandler)
		}
	}
}

// copyBufs holds the buffers bodies and tunnels are copied through. A
// buffer per request was most of the proxy's allocated bytes, and the
// garbage collector's work that came with them, under load.
var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

func getCopyBuf() *[]byte  { return copyBufs.Get().(*[]byte) }
func putCopyBuf(b *[]byte) { copyBufs.Put(b) }

// failureText is a safe description of err for a client: its class only.
func failureText(err error) string {
	return failure.Classify(err).String()
}
