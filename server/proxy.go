package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/server/internal/proxystatus"
	"github.com/hostguard/hostguard/server/internal/upstream"
)

// serveProxy is the forward proxy. Absolute-URI requests (what a client
// sends with HTTP_PROXY set) go through the guarded transport like the
// fetch route; CONNECT (what it sends for https:// with HTTPS_PROXY) opens
// a tunnel whose dial and first byte are evidence for the guard.
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodConnect {
		if err := s.connect(w, r); err != nil {
			s.refuseConnect(w, r, err)
		}
		return nil
	}
	if err := s.proxyAuth(w, r); err != nil {
		return err
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		return badRequest("", "this is a forward proxy: send absolute-URI requests (set HTTP_PROXY / HTTPS_PROXY to it), or use the API's /v1/fetch")
	}
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		return badRequest("", "the proxy forwards only http and https URLs")
	}
	if r.Header.Get("Upgrade") != "" {
		// Forwarding it without its hop-by-hop headers would silently
		// turn it into a plain GET; say so instead.
		return &apiError{Status: http.StatusNotImplemented, ProxyStatus: "http_request_denied",
			Message: "server: the proxy does not forward Upgrade requests (WebSocket and the like) as plain HTTP; send them through a CONNECT tunnel (HTTPS_PROXY, or a wss:// URL)"}
	}
	h, err := headerHints(r.Header)
	if err != nil {
		return err
	}
	// Before the guard is asked: a refused IP literal leaves no record.
	if err := s.precheckTarget("", r.URL); err != nil {
		return s.refusedTarget(err, "proxy")
	}
	// The URL is the one the request line gave, copied: printing it to
	// parse it again was about 8% of what a proxied request allocated.
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "", nil)
	if err != nil {
		return badRequest("", "the request cannot be forwarded: %s", failureText(err))
	}
	u := *r.URL
	out.URL = &u
	out.ContentLength = r.ContentLength
	if r.ContentLength == 0 {
		out.Body = http.NoBody
	} else {
		out.Body = &clientBody{r: r.Body, rc: http.NewResponseController(w), idle: s.cfg.IdleTimeout}
	}
	out.Host = r.Host
	forwardHeaders(out.Header, r.Header)
	resp, err := s.forward(out, h)
	if err != nil {
		return s.upstreamError(err, "proxy")
	}
	s.metrics.upstream.WithLabelValues("proxy", "answered").Inc()
	streamResponse(w, resp)
	return nil
}

// forwardHeaders copies what the client sent to an upstream request as
// the client sent it, plus Via: no hints, no hop-by-hop headers, and none
// that Go's client would add on its own (Accept-Encoding is never added
// because the base transport has compression off; an empty User-Agent
// keeps Go's out).
func forwardHeaders(dst, src http.Header) {
	upstream.CopyEndToEnd(dst, src)
	stripHints(dst)
	if _, ok := dst["User-Agent"]; !ok {
		dst["User-Agent"] = []string{""}
	}
	dst["Via"] = append(dst["Via"], "1.1 hostguard")
}

// proxyAuth checks the proxy credentials under the guess limit.
func (s *Server) proxyAuth(w http.ResponseWriter, r *http.Request) error {
	h := r.Header.Get("Proxy-Authorization")
	ok, refused := s.checkToken(r, h != "", func() bool { return s.token.allows(h, true) })
	switch {
	case ok:
		return nil
	case refused != nil:
		refused.ProxyStatus = "http_request_denied"
		return refused
	}
	return s.proxyAuthError(w)
}

func (s *Server) proxyAuthError(w http.ResponseWriter) error {
	w.Header().Set("Proxy-Authenticate", `Basic realm="hostguard"`)
	return &apiError{Status: http.StatusProxyAuthRequired,
		Message: "server: the proxy needs the daemon's token: Proxy-Authorization: Bearer TOKEN, or any user name with the token as password in the proxy URL"}
}

// refuseConnect answers a CONNECT the daemon refuses. Most clients show
// nothing of a failed CONNECT but its status line (Python's requests and
// httpx, for one), so its reason phrase is the answer's message, a
// sentence that names the situation; the Proxy-Status header and the
// JSON body follow as on every other answer.
func (s *Server) refuseConnect(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	e := s.errorFor(err)
	markDaemonAnswer(err, e)
	s.logFailure(err, e)
	rec := &headerRecorder{h: w.Header().Clone()}
	writeAPIError(rec, e)
	conn, brw, herr := http.NewResponseController(w).Hijack()
	if herr != nil {
		writeAPIError(w, e)
		return
	}
	defer conn.Close()
	noteStatus(w, e.Status)
	fmt.Fprintf(brw, "HTTP/1.1 %d %s\r\n", e.Status, proxystatus.ReasonPhrase(e.Message))
	rec.h.Set("Content-Length", fmt.Sprint(rec.body.Len()))
	rec.h.Set("Connection", "close")
	_ = rec.h.Write(brw)
	_, _ = brw.WriteString("\r\n")
	_, _ = brw.Write(rec.body.Bytes())
	_ = brw.Flush()
}

// headerRecorder captures an answer to write it by hand.
type headerRecorder struct {
	h    http.Header
	body bytes.Buffer
}

func (h *headerRecorder) Header() http.Header         { return h.h }
func (h *headerRecorder) Write(b []byte) (int, error) { return h.body.Write(b) }
func (h *headerRecorder) WriteHeader(int)             {}

// connectTimeoutError is what a tunnel reports when its target accepted the
// connection and then said nothing. It classifies as a timeout.
type connectTimeoutError struct{ after time.Duration }

func (e *connectTimeoutError) Error() string {
	return fmt.Sprintf("server: tunnel target sent nothing within %v of the client speaking", e.after)
}
func (e *connectTimeoutError) Timeout() bool   { return true }
func (e *connectTimeoutError) Temporary() bool { return true }
func (e *connectTimeoutError) Unwrap() error   { return context.DeadlineExceeded }

// connect serves one CONNECT tunnel. The guard endpoint is
// https://host:port, since CONNECT carries TLS almost always, so a tunnel to
// host:443 and a fetch of https://host/ are one endpoint.
func (s *Server) connect(w http.ResponseWriter, r *http.Request) error {
	if err := s.proxyAuth(w, r); err != nil {
		return err
	}
	hostport := r.Host
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return badRequest("", "CONNECT needs host:port")
	}
	h, err := headerHints(r.Header)
	if err != nil {
		return err
	}
	if err := s.precheck("", host, port); err != nil {
		return s.refusedTarget(err, "connect")
	}
	ticket, err := s.acquire(r.Context(), "https://"+hostport, h)
	if err != nil {
		if errors.Is(err, guard.ErrOpen) {
			s.metrics.upstream.WithLabelValues("connect", "fast_fail").Inc()
			return s.guardError(err, "proxy")
		}
		if gaveUp(err) {
			s.metrics.upstream.WithLabelValues("connect", "gave_up").Inc()
			return &upstreamError{err: err}
		}
		return badRequest("", "CONNECT target is not a valid host:port")
	}
	st := &tunnelTicket{t: ticket, chosen: h.timeout > 0}
	// Every path below settles the ticket: a report, or this release.
	defer st.release()

	timeout := s.cfg.HeaderTimeout
	if h.timeout > 0 {
		timeout = h.timeout
	}
	dialCtx, cancel := context.WithTimeout(r.Context(), timeout)
	dialStart := time.Now()
	up, err := s.dialer.DialContext(dialCtx, "tcp", hostport)
	cancel()
	if err != nil {
		if st.chosen && errors.Is(dialCtx.Err(), context.DeadlineExceeded) {
			// The client's own hint ran out: judged like a give-up.
			err = &guard.WaitError{Owed: time.Since(dialStart), Err: err}
		}
		st.failed(err)
		return s.upstreamError(err, "connect")
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return failed("taking over a CONNECT connection", err)
	}
	tun := &tunnel{client: client, up: up, timeout: timeout}
	if !s.tunnels.add(tun) {
		// Shutting down: no new tunnels.
		tun.close()
		return nil
	}
	defer s.tunnels.done(tun)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		tun.close()
		return nil
	}
	s.runTunnel(tun, st, brw.Reader)
	return nil
}

// tunnelTicket settles a tunnel's guard ticket exactly once, whichever of
// the first byte, the answer timer or the end of the tunnel comes first.
type tunnelTicket struct {
	t interface {
		AnsweredAfter(time.Duration)
		Failed(error)
		Release()
	}
	done    atomic.Bool
	chosen  bool         // the timeout is the client's hint: its expiry is judged like a give-up
	spokeAt atomic.Int64 // when the client spoke first, in Unix ns; 0 before
}

// answered settles the ticket with the target's first byte: what it
// needed is the time since the client spoke, or nothing for a target
// that speaks first.
func (tt *tunnelTicket) answered() bool {
	if tt.done.CompareAndSwap(false, true) {
		var need time.Duration
		if at := tt.spokeAt.Load(); at != 0 {
			need = time.Since(time.Unix(0, at))
		}
		tt.t.AnsweredAfter(need)
		return true
	}
	return false
}

func (tt *tunnelTicket) failed(err error) bool {
	if tt.done.CompareAndSwap(false, true) {
		tt.t.Failed(err)
		return true
	}
	return false
}

func (tt *tunnelTicket) release() {
	if tt.done.CompareAndSwap(false, true) {
		tt.t.Release()
	}
}

// runTunnel copies both ways until both sides are done. The first byte
// from the target is its answer; see firstByteDeadline for the rest.
func (s *Server) runTunnel(tun *tunnel, st *tunnelTicket, early io.Reader) {
	answered := make(chan struct{})
	spoke := make(chan struct{})
	left := make(chan struct{})
	finished := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { tun.fromTarget(st, answered) })
	wg.Go(func() { tun.fromClient(early, spoke, left) })
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		s.firstByteDeadline(tun, st, spoke, left, answered, finished)
	}()
	// Closing the tunnel unblocks both copiers; the watcher ends with them.
	wg.Wait()
	close(finished)
	<-watcherDone
	tun.close()
}

// fromTarget copies target to client; its first byte is the target's
// answer, and closes answered.
func (tun *tunnel) fromTarget(st *tunnelTicket, answered chan<- struct{}) {
	bp := getCopyBuf()
	defer putCopyBuf(bp)
	buf := *bp
	first := true
	for {
		n, err := tun.up.Read(buf)
		if n > 0 {
			if first {
				first = false
				st.answered()
				close(answered)
			}
			if _, werr := tun.client.Write(buf[:n]); werr != nil {
				tun.close()
				return
			}
		}
		if err != nil {
			if first && err != io.EOF && !tun.isClosed() {
				// The target cut the connection before saying
				// anything; the classifier decides whether that
				// counts (a reset does not).
				st.failed(err)
			}
			_ = closeWrite(tun.client)
			if err != io.EOF {
				tun.close()
			}
			return
		}
	}
}

// fromClient copies client to target, starting with early, the hijacked
// reader that holds any bytes the client sent before the tunnel opened;
// the client's first byte closes spoke, and the end of its side closes
// left.
func (tun *tunnel) fromClient(early io.Reader, spoke, left chan<- struct{}) {
	defer close(left)
	bp := getCopyBuf()
	defer putCopyBuf(bp)
	buf := *bp
	first := true
	for {
		n, err := early.Read(buf)
		if n > 0 {
			if first {
				first = false
				close(spoke)
			}
			if _, werr := tun.up.Write(buf[:n]); werr != nil {
				tun.close()
				return
			}
		}
		if err != nil {
			_ = closeWrite(tun.up)
			if err != io.EOF || first {
				// A client that leaves without a word waits for
				// nothing; keeping the tunnel would only hold the
				// ticket (perhaps a half-open endpoint's trial).
				tun.close()
			}
			return
		}
	}
}

// firstByteDeadline charges a tunnel's silence to whoever keeps it:
//
//   - a client that sends nothing within the timeout is the client's
//     business: the ticket is released as inconclusive (the tunnel stays),
//     so a silent tunnel never holds a half-open endpoint's trial;
//   - once the client has spoken, the target has the timeout to send its
//     first byte, or the ticket fails and the tunnel is closed, like a
//     server that accepts and never sends headers;
//   - a client that leaves after speaking, before any answer, has given up,
//     judged by the guard's wait rule (guard.WaitError); so is the expiry
//     of a timeout the client chose with its hint.
func (s *Server) firstByteDeadline(tun *tunnel, st *tunnelTicket, spoke, left, answered, finished <-chan struct{}) {
	t := time.NewTimer(tun.timeout)
	defer t.Stop()
	select {
	case <-spoke:
	case <-answered:
		return
	case <-finished:
		return
	case <-t.C:
		st.release()
		return
	}
	spokeAt := time.Now()
	st.spokeAt.Store(spokeAt.UnixNano())
	t.Reset(tun.timeout)
	for {
		select {
		case <-t.C:
			// Closed whether or not this settled the ticket: a client
			// that already left is not coming back for it.
			var err error = &connectTimeoutError{after: tun.timeout}
			if st.chosen {
				err = &guard.WaitError{Owed: time.Since(spokeAt), Err: err}
			}
			st.failed(err)
			tun.close()
			return
		case <-left:
			left = nil
			if !tun.isClosed() && s.baseCtx.Err() == nil {
				st.failed(&guard.WaitError{Owed: time.Since(spokeAt)})
			} else {
				st.release()
			}
		case <-answered:
			return
		case <-finished:
			return
		}
	}
}

// closeWrite half-closes c, or does nothing where c cannot.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
