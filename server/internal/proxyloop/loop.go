package proxyloop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options are what a Loop runs and its limits.
type Options struct {
	// Handler answers every request the loop reads itself.
	Handler http.Handler
	// BaseContext is the parent of every request's context; cancelling
	// it cuts them all.
	BaseContext context.Context
	// ConnContext, if set, derives a connection's context from
	// BaseContext, as http.Server's does.
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// HeadTimeout bounds a new connection's first request head, first
	// byte to last, and the rest of any later head once its first bytes
	// came.
	HeadTimeout time.Duration
	// IdleTimeout is how long a connection may wait for its next
	// request.
	IdleTimeout time.Duration
	// MaxHeaderBytes is the http.Server's bound on a head; a head the
	// loop's buffer (the smaller of it and 8 KiB) cannot hold is handed
	// off, and the server answers it 431 when it is over the bound.
	MaxHeaderBytes int
	// ErrorLog hears a handler's panic, as http.Server's does.
	ErrorLog *log.Logger
}

// Loop runs a listener's HTTP/1.1 connections itself, for the requests
// that are most of a forward proxy's traffic: plain absolute-URI http://
// requests without a body. Each connection's request heads are peeked,
// not consumed; at the first request that is anything else (CONNECT, an
// upload, HTTP/1.0, a head too big for the buffer) the connection, its
// buffered bytes first, is handed to an http.Server through the listener
// Handoff returns, where it stays for its life.
type Loop struct {
	ln      net.Listener
	opts    Options
	handoff *handoffListener

	mu    sync.Mutex
	conns map[*conn]bool // true while the connection handles a request
	// shutting is written under mu, so that the connection states agree
	// with it, and read without it on every request.
	shutting atomic.Bool
	empty    chan struct{} // closed when shutting and no connection is left
	wg       sync.WaitGroup
}

const (
	// watchAfter is how long a request runs before its client is watched
	// for leaving.
	watchAfter = 50 * time.Millisecond
	// headBuffer is the most of a request head the loop reads; a larger
	// head goes to http.Server, whose limit is higher.
	headBuffer = 8 << 10
)

// New returns a Loop over ln. Serve runs it; an http.Server serves what
// it hands off on Handoff.
func New(ln net.Listener, opts Options) *Loop {
	if opts.ErrorLog == nil {
		opts.ErrorLog = log.Default()
	}
	return &Loop{ln: ln, opts: opts, handoff: newHandoffListener(ln.Addr()), conns: make(map[*conn]bool)}
}

// Handoff is the listener of the connections the loop does not serve
// itself. Serve an http.Server on it; it is closed by closing that
// server.
func (ps *Loop) Handoff() net.Listener { return ps.handoff }

// Serve accepts connections until the listener is closed, then returns
// http.ErrServerClosed, or the error that stopped it.
func (ps *Loop) Serve() error {
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
		pc := newConn(ps, c)
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

func (ps *Loop) track(pc *conn) bool {
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
func (ps *Loop) setState(pc *conn, active bool) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.shutting.Load() && !active {
		return false
	}
	ps.conns[pc] = active
	return true
}

func (ps *Loop) untrack(pc *conn) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.conns, pc)
	if ps.shutting.Load() && len(ps.conns) == 0 && ps.empty != nil {
		close(ps.empty)
		ps.empty = nil
	}
}

func (ps *Loop) isShutting() bool { return ps.shutting.Load() }

// Shutdown stops accepting, closes idle connections and waits, at most
// until ctx ends, for those handling a request to finish it.
func (ps *Loop) Shutdown(ctx context.Context) {
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

// Close cuts every connection and waits for their goroutines.
func (ps *Loop) Close() {
	ps.mu.Lock()
	ps.shutting.Store(true)
	for pc := range ps.conns {
		pc.c.Close()
	}
	ps.mu.Unlock()
	ps.ln.Close()
	ps.wg.Wait()
}

// conn is one client connection on the loop.
type conn struct {
	ps *Loop
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

func newConn(ps *Loop, c net.Conn) *conn {
	pc := &conn{ps: ps, c: c, remote: c.RemoteAddr().String()}
	pc.rd.c = c
	// A head the buffer cannot hold is handed off, and http.Server
	// answers it 431 when it is over its bound.
	pc.br = bufio.NewReaderSize(&pc.rd, min(headBuffer, ps.opts.MaxHeaderBytes))
	pc.bw = bufio.NewWriterSize(c, 4<<10)
	ctx := ps.opts.BaseContext
	if ps.opts.ConnContext != nil {
		ctx = ps.opts.ConnContext(ctx, c)
	}
	pc.ctx, pc.cancel = context.WithCancel(ctx)
	pc.headerDeadline = func() { _ = c.SetReadDeadline(time.Now().Add(ps.opts.HeadTimeout)) }
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

func (pc *conn) serve() {
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
	_ = pc.c.SetReadDeadline(time.Now().Add(pc.ps.opts.HeadTimeout))
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
		_ = pc.c.SetReadDeadline(time.Now().Add(pc.ps.opts.IdleTimeout))
	}
}

// handOff gives the connection, with what is buffered of it, to the
// http.Server; false if that server is closed.
func (pc *conn) handOff() bool {
	buffered, _ := pc.br.Peek(pc.br.Buffered())
	rc := &replayConn{Conn: pc.c, early: bytes.Clone(buffered)}
	return pc.ps.handoff.give(rc)
}

// serveOne answers the request whose head is buffered. It reports
// whether the connection may carry another.
func (pc *conn) serveOne() (keep bool) {
	req, err := http.ReadRequest(pc.br)
	if err != nil {
		// fastRequestHead found a whole head; only its content can be
		// wrong here.
		_, _ = pc.c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"))
		return false
	}
	req = req.WithContext(pc.ctx)
	req.RemoteAddr = pc.remote
	w := &writer{pc: pc, req: req, header: make(http.Header, 8)}
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
func (pc *conn) run(w *writer, req *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			if v != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				pc.ps.opts.ErrorLog.Printf("http: panic serving %v: %v\n%s", pc.remote, v, buf)
			}
		}
	}()
	pc.ps.opts.Handler.ServeHTTP(w, req)
	return true
}

// clientWatch notices a client that leaves while its request runs: a
// read of the connection, started only once the request has run for
// watchAfter, that ends in EOF or an error. A byte it reads instead is
// the client's next request, kept for it.
type clientWatch struct {
	pc     *conn
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
func (pc *conn) watchClient() *clientWatch {
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
	rd := &cw.pc.rd
	n, err := rd.c.Read(rd.pending[:])
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
