package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// proxyServer runs the proxy listener's HTTP/1.1 connections itself, for
// the requests that are most of a forward proxy's traffic: plain
// absolute-URI http:// requests without a body. Each connection's
// request heads are peeked, not consumed; at the first request that is
// anything else (CONNECT, an upload, HTTP/1.0, a head too big for the
// buffer) the connection, its buffered bytes first, is handed to an
// http.Server through a listener of its own, where it stays for its life.
//
// What this saves per request over http.Server is its shape: a goroutine
// and a read that would block, to notice a client that leaves while its
// request runs, and two layers of response buffering. Here a client is
// watched only once its request has run for watchAfter (an upstream that
// answers in time never pays for it), and an answer is one buffered write.
type proxyServer struct {
	s       *Server
	ln      net.Listener
	handler http.Handler
	handoff *handoffListener
	errLog  *log.Logger

	mu    sync.Mutex
	conns map[*proxyConn]bool // true while the connection handles a request
	// shutting is written under mu, so that the connection states agree
	// with it, and read without it on every request.
	shutting atomic.Bool
	empty    chan struct{} // closed when shutting and no connection is left
	wg       sync.WaitGroup
}

// The limits of every client connection, the API's and the proxy's, on
// either path.
const (
	connReadHeaderTimeout = 10 * time.Second
	connIdleTimeout       = 2 * time.Minute
	// watchAfter is how long a request runs before its client is watched
	// for leaving.
	watchAfter = 50 * time.Millisecond
	// proxyHeadBuffer is the most of a request head the fast path reads;
	// a larger head goes to http.Server, whose limit is higher.
	proxyHeadBuffer = 8 << 10
)

func newProxyServer(s *Server, ln net.Listener, handler http.Handler, errLog *log.Logger) *proxyServer {
	return &proxyServer{s: s, ln: ln, handler: handler, errLog: errLog,
		handoff: newHandoffListener(ln.Addr()), conns: make(map[*proxyConn]bool)}
}

// serve accepts connections until the listener is closed.
func (ps *proxyServer) serve() error {
	var backoff time.Duration
	for {
		c, err := ps.ln.Accept()
		if err != nil {
			if ps.shutting.Load() || errors.Is(err, net.ErrClosed) {
				return http.ErrServerClosed
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// As http.Server does: out of descriptors is
				// temporary; wait for some to close.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		pc := newProxyConn(ps, c)
		if !ps.track(pc) {
			c.Close()
			continue
		}
		go func() {
			defer ps.wg.Done()
			pc.serve()
		}()
	}
}

func (ps *proxyServer) track(pc *proxyConn) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.shutting.Load() {
		return false
	}
	// Under the lock, so that closeAll's Wait never races an Add.
	ps.wg.Add(1)
	ps.conns[pc] = false
	return true
}

// setState records whether pc is handling a request. It returns false
// once a shutdown has begun and pc is idle: the connection must close.
func (ps *proxyServer) setState(pc *proxyConn, active bool) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.shutting.Load() && !active {
		return false
	}
	ps.conns[pc] = active
	return true
}

func (ps *proxyServer) untrack(pc *proxyConn) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.conns, pc)
	if ps.shutting.Load() && len(ps.conns) == 0 && ps.empty != nil {
		close(ps.empty)
		ps.empty = nil
	}
}

func (ps *proxyServer) isShutting() bool { return ps.shutting.Load() }

// shutdown stops accepting, closes idle connections and waits, at most
// until ctx ends, for those handling a request to finish it.
func (ps *proxyServer) shutdown(ctx context.Context) {
	ps.mu.Lock()
	ps.shutting.Store(true)
	for pc, active := range ps.conns {
		if !active {
			pc.c.Close()
		}
	}
	var empty chan struct{}
	if len(ps.conns) > 0 {
		ps.empty = make(chan struct{})
		empty = ps.empty
	}
	ps.mu.Unlock()
	ps.ln.Close()
	if empty != nil {
		select {
		case <-empty:
		case <-ctx.Done():
		}
	}
}

// closeAll cuts every connection and waits for their goroutines.
func (ps *proxyServer) closeAll() {
	ps.mu.Lock()
	ps.shutting.Store(true)
	for pc := range ps.conns {
		pc.c.Close()
	}
	ps.mu.Unlock()
	ps.ln.Close()
	ps.wg.Wait()
}

// proxyConn is one client connection on the fast path.
type proxyConn struct {
	ps *proxyServer
	c  net.Conn
	rd pendingReader
	br *bufio.Reader
	bw *bufio.Writer
	// ctx is every request's context on this connection, cancelled when
	// its client is seen to leave (which ends the connection too) or when
	// the connection ends. One per connection, not per request: a context
	// per request was registered with, and removed from, the server's
	// base context under its lock every time.
	ctx    context.Context
	cancel context.CancelFunc
	// watch is the last request's client watch, reused when its timer
	// was stopped before it fired.
	watch *clientWatch
	// headerDeadline bounds the wait for the rest of a request head; it
	// is set only when the head's first bytes came without the rest, so
	// a head that arrives whole costs no deadline of its own.
	headerDeadline func()
	// remote is the client's address, as http.Request.RemoteAddr.
	remote string
}

func newProxyConn(ps *proxyServer, c net.Conn) *proxyConn {
	pc := &proxyConn{ps: ps, c: c, remote: c.RemoteAddr().String()}
	pc.rd.c = c
	// A head the buffer cannot hold is handed off, and http.Server
	// answers it 431 when it is over the daemon's bound.
	pc.br = bufio.NewReaderSize(&pc.rd, min(proxyHeadBuffer, ps.s.cfg.MaxHeaderBytes))
	pc.bw = bufio.NewWriterSize(c, 4<<10)
	pc.ctx, pc.cancel = context.WithCancel(withConn(ps.s.baseCtx, c))
	pc.headerDeadline = func() { _ = c.SetReadDeadline(time.Now().Add(ps.s.cfg.headTimeout)) }
	return pc
}

// pendingReader reads the byte a client watcher took, then the
// connection.
type pendingReader struct {
	c       net.Conn
	pending [1]byte
	has     bool
}

func (r *pendingReader) Read(p []byte) (int, error) {
	if r.has && len(p) > 0 {
		r.has = false
		p[0] = r.pending[0]
		return 1, nil
	}
	return r.c.Read(p)
}

func (pc *proxyConn) serve() {
	handedOff := false
	defer func() {
		pc.cancel()
		if !handedOff {
			pc.c.Close()
		}
		pc.ps.untrack(pc)
	}()
	// A new connection's first head, first byte to last, is due within
	// the head timeout, as http.Server has it: a client that connects
	// and says nothing holds a slot only that long. Later requests may
	// wait for the idle timeout, then have the head timeout for the rest
	// of their head.
	_ = pc.c.SetReadDeadline(time.Now().Add(pc.ps.s.cfg.headTimeout))
	var beforeWait func()
	for {
		if !pc.ps.setState(pc, false) {
			return
		}
		if _, err := pc.br.Peek(1); err != nil {
			return
		}
		if !pc.ps.setState(pc, true) {
			return
		}
		if !fastRequestHead(pc.br, beforeWait) {
			handedOff = pc.handOff()
			return
		}
		beforeWait = pc.headerDeadline
		_ = pc.c.SetReadDeadline(time.Time{})
		if !pc.serveOne() {
			return
		}
		_ = pc.c.SetReadDeadline(time.Now().Add(connIdleTimeout))
	}
}

// handOff gives the connection, with what is buffered of it, to the
// http.Server; false if that server is closed.
func (pc *proxyConn) handOff() bool {
	pc.ps.s.proxyHandoffs.Add(1)
	buffered, _ := pc.br.Peek(pc.br.Buffered())
	rc := &replayConn{Conn: pc.c, early: bytes.Clone(buffered)}
	return pc.ps.handoff.give(rc)
}

// serveOne answers the request whose head is buffered. It reports
// whether the connection may carry another.
func (pc *proxyConn) serveOne() (keep bool) {
	req, err := http.ReadRequest(pc.br)
	if err != nil {
		// fastRequestHead found a whole head; only its content can be
		// wrong here.
		_, _ = pc.c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"))
		return false
	}
	req = req.WithContext(pc.ctx)
	req.RemoteAddr = pc.remote
	w := &proxyWriter{pc: pc, req: req, header: make(http.Header, 8)}
	w.watch = pc.watchClient()
	if !pc.run(w, req) {
		w.watch.stop()
		return false
	}
	w.watch.stop()
	if err := w.finish(); err != nil {
		return false
	}
	return !w.closeAfter && !w.watch.gone && !pc.ps.isShutting()
}

// run calls the handler; false if it panicked (with http.ErrAbortHandler
// to cut the connection on purpose, or a bug, logged as http.Server
// does).
func (pc *proxyConn) run(w *proxyWriter, req *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			if v != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				pc.ps.errLog.Printf("http: panic serving %v: %v\n%s", pc.remote, v, buf)
			}
		}
	}()
	pc.ps.handler.ServeHTTP(w, req)
	return true
}

// fastRequestHead reports whether the buffered request head, read whole
// into the buffer, is one the fast path serves: an absolute http:// URL,
// HTTP/1.1, one Host header, no body framing (Transfer-Encoding, a
// Content-Length other than one of 0) and no Expect, written so plainly
// that http.Server would read it the same way (see plainHead). Anything
// else is http.Server's, which knows every rule of the protocol and
// refuses what breaks them. beforeWait runs once, before the first read
// that waits for more of the head.
func fastRequestHead(br *bufio.Reader, beforeWait func()) bool {
	var head []byte
	for {
		b, _ := br.Peek(br.Buffered())
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			head = b[:i+2]
			break
		}
		if len(b) >= br.Size() {
			return false
		}
		if beforeWait != nil {
			beforeWait()
			beforeWait = nil
		}
		// Wait for more of the head.
		if _, err := br.Peek(len(b) + 1); err != nil {
			return false
		}
	}
	return plainHead(head)
}

// plainHead reports whether head, a request line and header lines each
// ending in CRLF, is a request the fast path serves, spelled so that no
// reader can find another request boundary in it than net/http does. The
// fast path reads the request with http.ReadRequest, which is laxer than
// http.Server: it keeps a header named "Content-Length " (a space before
// the colon) as an unknown header, and so reads a body meant for it as the
// next request, where http.Server answers 400. So every byte is checked
// here against what the server accepts, and more strictly where that is
// simpler: a name is a token directly followed by its colon, a value
// holds no control byte but tab (so no bare CR or LF), no line is folded,
// the request line is single-spaced with a visible-ASCII target, and the
// Host is a plain host[:port]. A head this refuses is handed off, and the
// server answers it or refuses it with 400 and a closed connection.
func plainHead(head []byte) bool {
	i := bytes.Index(head, []byte("\r\n"))
	line, rest := head[:i], head[i+2:]
	m := 0
	for m < len(line) && tokenByte[line[m]] {
		m++
	}
	if m == 0 || m == len(line) || line[m] != ' ' || string(line[:m]) == http.MethodConnect {
		return false
	}
	target, ok := bytes.CutSuffix(line[m+1:], []byte(" HTTP/1.1"))
	if !ok || !hasPrefixFold(target, "http://") {
		return false
	}
	for _, c := range target {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	hosts, lengths := 0, 0
	for len(rest) > 0 {
		j := bytes.Index(rest, []byte("\r\n"))
		h := rest[:j]
		rest = rest[j+2:]
		n := 0
		for n < len(h) && tokenByte[h[n]] {
			n++
		}
		if n == 0 || n == len(h) || h[n] != ':' {
			// Folded, a name with another byte in it, or no colon.
			return false
		}
		name, value := h[:n], h[n+1:]
		for _, c := range value {
			if !valueByte[c] {
				return false
			}
		}
		switch {
		case equalFold(name, "host"):
			hosts++
			v := bytes.Trim(value, " \t")
			if len(v) == 0 {
				return false
			}
			for _, c := range v {
				if !hostByte[c] {
					return false
				}
			}
		case equalFold(name, "content-length"):
			// A body declared empty is no body, and clients send it so
			// with many a POST or DELETE; handed off, the connection
			// would leave the fast path for life. Any other length,
			// or a second header, is framing for http.Server.
			lengths++
			if lengths > 1 || string(bytes.Trim(value, " \t")) != "0" {
				return false
			}
		case equalFold(name, "transfer-encoding"), equalFold(name, "expect"):
			return false
		}
	}
	return hosts == 1
}

// equalFold reports whether b is name, a lower-case ASCII string, in any
// case.
func equalFold(b []byte, name string) bool {
	return len(b) == len(name) && hasPrefixFold(b, name)
}

// The bytes plainHead accepts: tokenByte in a method or a header name
// (RFC 9110's tchar), valueByte in a header value (visible ASCII, space,
// tab and obs-text, as http.Server allows), hostByte in a Host (letters,
// digits and what a name, an IP literal and a port need; http.Server
// accepts a few more, which then take the other path).
var tokenByte, valueByte, hostByte = func() (t, v, h [256]bool) {
	for c := 0; c < 256; c++ {
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		t[c] = alnum || strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
		v[c] = c == '\t' || ' ' <= c && c != 0x7f
		h[c] = alnum || strings.IndexByte("-._:[]", byte(c)) >= 0
	}
	return
}()

// clientWatch notices a client that leaves while its request runs: a
// read of the connection, started only once the request has run for
// watchAfter, that ends in EOF or an error. A byte it reads instead is
// the client's next request, kept for it.
type clientWatch struct {
	pc     *proxyConn
	cancel context.CancelFunc
	timer  *time.Timer
	mu     sync.Mutex
	state  int // 0 waiting, 1 reading, 2 stopped
	done   chan struct{}
	gone   bool // read only after stop
	// reusable is false once stop found the timer already fired without
	// the read having started: its function may still be on its way to
	// the lock, and must never find a later request's watch waiting.
	reusable bool
}

// watchClient starts the watch of a request's client. A connection keeps
// one watch and its timer for all its requests: a timer per request was
// an allocation and a timer heap insertion each time.
func (pc *proxyConn) watchClient() *clientWatch {
	cw := pc.watch
	if cw == nil || !cw.reusable {
		cw = &clientWatch{pc: pc, cancel: pc.cancel, state: 2}
		cw.timer = time.AfterFunc(time.Hour, cw.read)
		cw.timer.Stop()
		pc.watch = cw
	}
	cw.gone, cw.done, cw.reusable = false, nil, true
	if pc.br.Buffered() > 0 {
		// The client has sent more already (pipelining): it is there.
		cw.state = 2
		return cw
	}
	cw.state = 0
	cw.timer.Reset(watchAfter)
	return cw
}

func (cw *clientWatch) read() {
	cw.mu.Lock()
	if cw.state != 0 {
		cw.mu.Unlock()
		return
	}
	cw.state = 1
	cw.done = make(chan struct{})
	cw.mu.Unlock()
	defer close(cw.done)
	hook := cw.pc.ps.s.watchHook.Load()
	if hook != nil {
		(*hook)(true)
	}
	rd := &cw.pc.rd
	n, err := rd.c.Read(rd.pending[:])
	if hook != nil {
		(*hook)(false)
	}
	if n > 0 {
		rd.has = true
		return
	}
	if !isDeadline(err) {
		cw.gone = true
		cw.cancel()
	}
}

func isDeadline(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// stop ends the watch before the answer is written; it is idempotent.
func (cw *clientWatch) stop() {
	cw.mu.Lock()
	state := cw.state
	cw.state = 2
	cw.mu.Unlock()
	switch state {
	case 0:
		if !cw.timer.Stop() {
			cw.reusable = false
		}
	case 1:
		_ = cw.pc.c.SetReadDeadline(time.Unix(1, 0))
		<-cw.done
		_ = cw.pc.c.SetReadDeadline(time.Time{})
	}
}

// handoffListener is the http.Server's side of a hand-off.
type handoffListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) give(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// replayConn is a handed-off connection: what the fast path had buffered
// is read first.
type replayConn struct {
	net.Conn
	early []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(p, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite half-closes the connection, for a tunnel (see sniffConn's).
func (c *replayConn) CloseWrite() error { return closeWrite(c.Conn) }
