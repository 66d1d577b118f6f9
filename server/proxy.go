package server

import (
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
)

// serveProxy is the forward proxy. Absolute-URI requests (what a client
// sends with HTTP_PROXY set) go through the guarded transport like the
// fetch route; CONNECT (what it sends for https:// with HTTPS_PROXY) opens
// a tunnel whose dial and first byte are evidence for the guard.
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request) error {
	if !s.token.allows(r.Header.Get("Proxy-Authorization"), true) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="hostguard"`)
		return &apiError{Status: http.StatusProxyAuthRequired,
			Message: "server: the proxy needs the daemon's token: Proxy-Authorization: Bearer TOKEN, or any user name with the token as password in the proxy URL"}
	}
	if r.Method == http.MethodConnect {
		return s.connect(w, r)
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		return badRequest("", "this is a forward proxy: send absolute-URI requests (set HTTP_PROXY / HTTPS_PROXY to it), or use the API's /v1/fetch")
	}
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		return badRequest("", "the proxy forwards only http and https URLs")
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
	if err != nil {
		return badRequest("", "the request cannot be forwarded: %s", failureText(err))
	}
	out.ContentLength = r.ContentLength
	if r.ContentLength == 0 {
		out.Body = http.NoBody
	}
	out.Host = r.Host
	copyEndToEnd(out.Header, r.Header)
	resp, err := s.rt.RoundTrip(out)
	if err != nil {
		return s.upstreamError(err, "proxy")
	}
	s.metrics.upstream.WithLabelValues("proxy", "answered").Inc()
	streamResponse(w, resp)
	return nil
}

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
	hostport := r.Host
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		return badRequest("", "CONNECT needs host:port")
	}
	ticket, err := s.guard.Acquire("https://" + hostport)
	if err != nil {
		if errors.Is(err, guard.ErrOpen) {
			s.metrics.upstream.WithLabelValues("connect", "fast_fail").Inc()
			return s.guardError(err, "proxy")
		}
		return badRequest("", "CONNECT target is not a valid host:port")
	}
	st := &tunnelTicket{t: ticket}
	// Every path below settles the ticket: a report, or this release.
	defer st.release()

	dialCtx, cancel := context.WithTimeout(r.Context(), s.cfg.HeaderTimeout)
	up, err := s.dialer.DialContext(dialCtx, "tcp", hostport)
	cancel()
	if err != nil {
		st.failed(err)
		return s.upstreamError(err, "connect")
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return failed("taking over a CONNECT connection", err)
	}
	tun := &tunnel{client: client, up: up}
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
		Answered()
		Failed(error)
		Release()
	}
	done atomic.Bool
}

func (tt *tunnelTicket) answered() bool {
	if tt.done.CompareAndSwap(false, true) {
		tt.t.Answered()
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
// from the target is its answer. Once the client has sent something, the
// target has HeaderTimeout to send its first byte or it counts as not
// answering, like a server that accepts and then never sends headers.
func (s *Server) runTunnel(tun *tunnel, st *tunnelTicket, early io.Reader) {
	answered := make(chan struct{})
	spoke := make(chan struct{})
	finished := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { tun.fromTarget(st, answered) })
	wg.Go(func() { tun.fromClient(early, spoke) })
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		s.firstByteDeadline(tun, st, spoke, answered, finished)
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
	buf := make([]byte, 32<<10)
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
			closeWrite(tun.client)
			if err != io.EOF {
				tun.close()
			}
			return
		}
	}
}

// fromClient copies client to target, starting with early, the hijacked
// reader that holds any bytes the client sent before the tunnel opened;
// the client's first byte closes spoke.
func (tun *tunnel) fromClient(early io.Reader, spoke chan<- struct{}) {
	buf := make([]byte, 32<<10)
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
			closeWrite(tun.up)
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

// firstByteDeadline gives the target HeaderTimeout from the client's first
// byte to send its own, and fails the ticket and the tunnel if it does not.
func (s *Server) firstByteDeadline(tun *tunnel, st *tunnelTicket, spoke, answered, finished <-chan struct{}) {
	select {
	case <-spoke:
	case <-answered:
		return
	case <-finished:
		return
	}
	t := time.NewTimer(s.cfg.HeaderTimeout)
	defer t.Stop()
	select {
	case <-t.C:
		if st.failed(&connectTimeoutError{after: s.cfg.HeaderTimeout}) {
			tun.close()
		}
	case <-answered:
	case <-finished:
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
