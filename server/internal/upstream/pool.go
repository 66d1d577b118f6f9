package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/hostguard/hostguard/internal/hop"
)

// Pool sends bodyless plain-HTTP requests on the caller's own goroutine,
// over connections it reads and writes itself; everything else (https,
// uploads, anything unusual) goes to base. It tells the forwarding rules'
// header timer when the connection is up and when the upstream has the
// whole request (for base, through the request's httptrace hooks GotConn
// and WroteRequest), and dials through the dialer it is given (the
// destination policy runs there, after DNS).
type Pool struct {
	base http.RoundTripper
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	idle time.Duration // how long a connection may wait in the pool
	max  int           // idle connections kept per host
	now  func() time.Time

	mu     sync.Mutex
	pool   map[string][]*plainConn // most recently used last
	closed bool
}

// New returns a Pool over base for what it does not send itself, dialling
// through dial. idle is how long a connection may wait in the pool, max
// how many wait per host.
func New(base http.RoundTripper, dial func(ctx context.Context, network, address string) (net.Conn, error), idle time.Duration, max int) *Pool {
	return &Pool{base: base, dial: dial, idle: idle, max: max, now: time.Now, pool: make(map[string][]*plainConn)}
}

// plainConn is one pooled upstream connection with its buffers.
type plainConn struct {
	c      net.Conn
	lr     limitedReader
	br     *bufio.Reader
	bw     *bufio.Writer
	addr   string
	idleAt time.Time
}

// maxResponseHeader bounds an upstream's header block, as
// http.Transport's default MaxResponseHeaderBytes does.
const maxResponseHeader = 10 << 20

var errResponseHeaderTooLarge = errors.New("server: upstream response headers exceed 10 MiB")

// limitedReader fails a read once n bytes have gone through it; the
// header block is read under a bound, the body under none.
type limitedReader struct {
	c net.Conn
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errResponseHeaderTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.c.Read(p)
	l.n -= int64(n)
	return n, err
}

// Send implements hop.Sender: it sends req, bounded by ctx instead of
// req's own context. The plain path takes ph directly: building an
// httptrace context and a copy of the request for it was a fifth of what
// a proxied request allocated in contexts. direct reports that the plain
// path served it, so that ph has heard all it will by the time Send
// returns; base may call its hooks later (WroteRequest after an early
// answer).
func (t *Pool) Send(ctx context.Context, req *http.Request, ph hop.Phases) (resp *http.Response, direct bool, err error) {
	addr, ok := plainAddr(req)
	if !ok {
		trace := &httptrace.ClientTrace{GotConn: ph.GotConn, WroteRequest: ph.WroteRequest}
		ureq := req.WithContext(httptrace.WithClientTrace(ctx, trace))
		resp, err := t.base.RoundTrip(ureq)
		if resp != nil && resp.Request == ureq {
			resp.Request = req
		}
		return resp, false, err
	}
	replayable := isReplayable(req)
	for attempt := 0; ; attempt++ {
		pc, reused, err := t.conn(ctx, addr, replayable)
		if err != nil {
			return nil, true, err
		}
		ph.GotConn(httptrace.GotConnInfo{Conn: pc.c, Reused: reused})
		resp, early, err := t.exchange(ctx, pc, req, ph)
		if err == nil {
			return resp, true, nil
		}
		// A reused connection that fails before any byte of an answer
		// was most likely closed by the upstream while idle: the request
		// never reached a live server, so sending it again is safe for a
		// request that can be replayed.
		if !early || !reused || !replayable || attempt > 0 || ctx.Err() != nil {
			return nil, true, err
		}
	}
}

// Pooled implements hop.Sender: the daemon's requests share header
// timers.
func (t *Pool) Pooled() bool { return true }

// conn takes a pooled connection to addr, or dials one. A request that
// cannot be replayed gets a pooled connection only after a check that the
// upstream has not closed it, since it would not be retried on another.
func (t *Pool) conn(ctx context.Context, addr string, replayable bool) (pc *plainConn, reused bool, err error) {
	for {
		pc := t.get(addr)
		if pc == nil {
			break
		}
		if replayable || connAlive(pc.c) {
			return pc, true, nil
		}
		pc.c.Close()
	}
	c, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	pc = &plainConn{c: c, addr: addr}
	pc.lr.c = c
	pc.br = bufio.NewReaderSize(&pc.lr, 4<<10)
	pc.bw = bufio.NewWriterSize(c, 4<<10)
	return pc, false, nil
}

// exchange writes req on pc and reads the answer's head. early reports a
// failure before any byte of the answer arrived. While it runs and while
// the body is read, the end of ctx closes the connection, which unblocks
// both.
func (t *Pool) exchange(ctx context.Context, pc *plainConn, req *http.Request, ph hop.Phases) (resp *http.Response, early bool, err error) {
	stop := context.AfterFunc(ctx, func() { pc.c.Close() })
	fail := func(err error, early bool) (*http.Response, bool, error) {
		stop()
		pc.c.Close()
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, early, err
	}
	writeRequestHead(pc.bw, req)
	if err := pc.bw.Flush(); err != nil {
		return fail(err, true)
	}
	ph.WroteRequest(httptrace.WroteRequestInfo{})
	pc.lr.n = maxResponseHeader
	if _, err := pc.br.Peek(1); err != nil {
		return fail(err, true)
	}
	for informational := 0; ; informational++ {
		resp, err = http.ReadResponse(pc.br, req)
		if err != nil {
			return fail(err, false)
		}
		// 1xx answers other than 101 precede the real one; http.Transport
		// skips them too. 101 is never asked for (Upgrade is not
		// forwarded).
		if resp.StatusCode >= 200 || informational >= 5 {
			break
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return fail(fmt.Errorf("server: upstream switched protocols unasked"), false)
		}
	}
	if resp.StatusCode < 200 {
		return fail(fmt.Errorf("server: upstream sent too many 1xx responses"), false)
	}
	pc.lr.n = math.MaxInt64
	reusable := !resp.Close
	if resp.Body == nil || resp.Body == http.NoBody {
		resp.Body = http.NoBody
		t.done(pc, stop, reusable)
		return resp, false, nil
	}
	resp.Body = &plainBody{rc: resp.Body, t: t, pc: pc, ctx: ctx, stop: stop, reusable: reusable, left: resp.ContentLength}
	return resp, false, nil
}

// done ends a request on pc: back to the pool if the answer was read
// whole and the connection may carry another, closed otherwise.
func (t *Pool) done(pc *plainConn, stop func() bool, reusable bool) {
	// stop is false once ctx has ended and closed the connection.
	if !stop() || !reusable || pc.br.Buffered() > 0 {
		pc.c.Close()
		return
	}
	t.put(pc)
}

// plainBody is an answer's body. Read to its end, it returns the
// connection to the pool; closed early, it closes the connection, because
// what is left of the body would have to be read first.
type plainBody struct {
	rc       io.ReadCloser
	t        *Pool
	pc       *plainConn
	ctx      context.Context
	stop     func() bool
	reusable bool
	mu       sync.Mutex
	finished bool
	// left is how much of a body of declared length is still to come;
	// -1 for a body of unknown length (chunked, or until the close).
	left int64
}

// Readable implements hop.Buffered: the rest of a body of declared length
// is already buffered, or nothing is left but its end. (A chunked body's
// next read may need bytes that are not there yet.)
func (b *plainBody) Readable() bool {
	return b.left == 0 || (b.left > 0 && b.pc.br.Buffered() > 0)
}

func (b *plainBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		b.finish(true)
		return n, err
	}
	b.finish(false)
	if b.ctx.Err() != nil {
		// As http.Transport does: a cancelled request's body fails
		// with the cancellation, which callers tell from an upstream
		// failure.
		return n, b.ctx.Err()
	}
	return n, err
}

func (b *plainBody) finish(eof bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	if eof {
		b.t.done(b.pc, b.stop, b.reusable)
		return
	}
	b.stop()
	b.pc.c.Close()
}

// Close never drains: the body may be endless.
func (b *plainBody) Close() error {
	b.finish(false)
	return nil
}

// get takes the most recently used idle connection to addr, dropping
// those that waited too long.
func (t *Pool) get(addr string) *plainConn {
	t.mu.Lock()
	stale, conns := splitStale(t.pool[addr], t.now().Add(-t.idle))
	var pc *plainConn
	if n := len(conns); n > 0 {
		pc = conns[n-1]
		conns[n-1] = nil
		conns = conns[:n-1]
	}
	if len(conns) == 0 {
		delete(t.pool, addr)
	} else {
		t.pool[addr] = conns
	}
	t.mu.Unlock()
	for _, c := range stale {
		c.c.Close()
	}
	return pc
}

// splitStale splits a host's idle connections, oldest first, into those
// idle since before cut and the rest.
func splitStale(conns []*plainConn, cut time.Time) (stale, rest []*plainConn) {
	i := 0
	for i < len(conns) && conns[i].idleAt.Before(cut) {
		i++
	}
	return conns[:i:i], conns[i:]
}

func (t *Pool) put(pc *plainConn) {
	pc.idleAt = t.now()
	t.mu.Lock()
	conns := t.pool[pc.addr]
	if t.closed || len(conns) >= t.max {
		t.mu.Unlock()
		pc.c.Close()
		return
	}
	t.pool[pc.addr] = append(conns, pc)
	t.mu.Unlock()
}

// CloseIdle closes every idle connection; once final, none is kept
// again, and base's idle connections are closed too.
func (t *Pool) CloseIdle(final bool) {
	t.mu.Lock()
	pool := t.pool
	t.pool = make(map[string][]*plainConn)
	t.closed = t.closed || final
	t.mu.Unlock()
	for _, conns := range pool {
		for _, pc := range conns {
			pc.c.Close()
		}
	}
	if final {
		if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
			ci.CloseIdleConnections()
		}
	}
}

// Expire closes the idle connections that waited longer than the idle
// timeout, for hosts no request has asked for since.
func (t *Pool) Expire() {
	cut := t.now().Add(-t.idle)
	var stale []*plainConn
	t.mu.Lock()
	for addr, conns := range t.pool {
		old, rest := splitStale(conns, cut)
		stale = append(stale, old...)
		if len(rest) == 0 {
			delete(t.pool, addr)
		} else if len(old) > 0 {
			t.pool[addr] = append(conns[:0:0], rest...)
		}
	}
	t.mu.Unlock()
	for _, pc := range stale {
		pc.c.Close()
	}
}

// plainAddr is the dial address of a request the fast path takes: plain
// http, no body, ASCII host, headers that can be written as they are and
// nothing that asks for more than one request and one answer.
func plainAddr(req *http.Request) (string, bool) {
	u := req.URL
	if u.Scheme != "http" || u.Host == "" || u.User != nil || req.Method == http.MethodConnect {
		return "", false
	}
	if req.ContentLength != 0 || (req.Body != nil && req.Body != http.NoBody) || req.Close || len(req.TransferEncoding) > 0 || req.Trailer != nil {
		return "", false
	}
	if !plainToken(req.Method) || (req.Host != "" && !plainHost(req.Host)) {
		return "", false
	}
	host, port := u.Hostname(), u.Port()
	if !plainHost(host) || strings.Contains(host, "%") {
		return "", false
	}
	for k, vv := range req.Header {
		if k == "Expect" || !plainToken(k) {
			return "", false
		}
		for _, v := range vv {
			if !plainValue(v) {
				return "", false
			}
		}
	}
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port), true
}

// plainHost accepts what a Host header may carry without IDNA mapping.
func plainHost(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"<>\^`+"`{|}/?#@", c) >= 0 {
			return false
		}
	}
	return true
}

func plainToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func plainValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}

// isReplayable is http.Transport's rule: a bodyless request whose method
// is safe, or that carries an idempotency key.
func isReplayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, a := req.Header["Idempotency-Key"]
	_, b := req.Header["X-Idempotency-Key"]
	return a || b
}

// writeRequestHead writes what http.Transport would for a bodyless
// request: its headers but those the request line and framing own, the
// first User-Agent unless it is empty, and Content-Length: 0 for the
// methods servers expect it on.
func writeRequestHead(w *bufio.Writer, req *http.Request) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(req.URL.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	if ua := req.Header["User-Agent"]; len(ua) > 0 && ua[0] != "" {
		w.WriteString("User-Agent: ")
		w.WriteString(ua[0])
		w.WriteString("\r\n")
	}
	if method != http.MethodGet && method != http.MethodHead {
		w.WriteString("Content-Length: 0\r\n")
	}
	for k, vv := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		for _, v := range vv {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(strings.TrimSpace(v))
			w.WriteString("\r\n")
		}
	}
	w.WriteString("\r\n")
}
