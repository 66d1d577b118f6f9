package server

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hostguard/hostguard/server/internal/connlimit"
	"github.com/hostguard/hostguard/server/internal/proxyloop"
)

// Serve answers the API on api and the forward proxy on proxy (nil leaves
// the proxy off) until ctx ends, then shuts down gracefully: it stops
// accepting, lets in-flight requests and tunnels finish for at most
// Config.ShutdownTimeout, cuts what remains (which releases their guard
// tickets), releases every remote ticket and stops the sweeper. It returns
// nil after a shutdown that ctx asked for, or the error that stopped a
// listener. The caller still owns and closes the stores behind Health and
// Retry.
func (s *Server) Serve(ctx context.Context, api, proxy net.Listener) error {
	errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	apiSrv := s.httpServer(s.api, errorLog)
	if s.cfg.BodyTimeout > 0 {
		// The API's bodies are small JSON: a client that takes longer than
		// this to send one, or to read a short answer, is holding the
		// connection, not using it. Routes that wait or stream lift both
		// deadlines once the body is in (see liftDeadlines). The proxy's
		// bodies are the client's own uploads and downloads, unbounded.
		apiSrv.ReadTimeout = s.cfg.BodyTimeout
		apiSrv.WriteTimeout = s.cfg.BodyTimeout
	}
	servers := []*http.Server{apiSrv}
	listeners := []net.Listener{connlimit.Listen(api, s.cfg.MaxConns, false, nil)}
	// The proxy's connections are served by its own loop, which hands
	// what it does not serve itself to an http.Server.
	var fast *proxyloop.Loop
	if proxy != nil {
		fallback := s.httpServer(s.proxy, errorLog)
		fast = s.proxyLoop(proxy, fallback.Handler, errorLog)
		servers = append(servers, fallback)
		listeners = append(listeners, fast.Handoff())
		s.own.SetListens(api.Addr(), proxy.Addr())
	} else {
		s.own.SetListens(api.Addr())
	}
	// The interface addresses are re-read when the kernel says they
	// changed; the watcher stops with Serve.
	defer s.own.Watch(s.log)()
	errc := make(chan error, len(servers)+1)
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	running := len(servers)
	if fast != nil {
		go func() { errc <- fast.Serve() }()
		running++
	}
	// The periodic work stops first on the way out: it must not outlive
	// the stores the caller closes after Serve.
	leadCtx, stopLead := context.WithCancel(context.Background())
	defer stopLead()
	leadDone := make(chan struct{})
	go func() {
		defer close(leadDone)
		s.runLeader(leadCtx)
	}()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		running--
		if errors.Is(serveErr, http.ErrServerClosed) {
			serveErr = nil
		}
	}
	s.log.Info("server: shutting down", "drain", s.cfg.ShutdownTimeout)
	s.stopDraining()
	stopLead()
	s.drain(servers, fast)
	for ; running > 0; running-- {
		<-errc
	}
	// Handlers of cut connections return promptly once their context is
	// cancelled; waiting for them means no handler outlives Serve.
	lastCtx, cancelLast := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelLast()
	if !s.active.wait(lastCtx) {
		s.log.Warn("server: some handlers were still running at exit")
	}
	<-leadDone
	s.Close()
	s.log.Info("server: stopped")
	return serveErr
}

// proxyLoop serves the proxy listener with the daemon's own connection
// loop, under the same limits and handler as the http.Server it hands the
// rest to.
func (s *Server) proxyLoop(proxy net.Listener, h http.Handler, errorLog *log.Logger) *proxyloop.Loop {
	return proxyloop.New(connlimit.Listen(proxy, s.cfg.MaxConns, true, nil), proxyloop.Options{
		Handler:        h,
		BaseContext:    s.baseCtx,
		ConnContext:    connlimit.ConnContext,
		HeadTimeout:    s.cfg.headTimeout,
		IdleTimeout:    connIdleTimeout,
		MaxHeaderBytes: s.cfg.MaxHeaderBytes,
		ErrorLog:       errorLog,
	})
}

// The limits of every client connection, the API's and the proxy's, on
// either path.
const (
	connReadHeaderTimeout = 10 * time.Second
	connIdleTimeout       = 2 * time.Minute
)

// httpServer serves h with the daemon's connection limits and context.
func (s *Server) httpServer(h http.Handler, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           refuseSmuggling(s.active.track(h)),
		ReadHeaderTimeout: s.cfg.headTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		IdleTimeout:       connIdleTimeout,
		ErrorLog:          errorLog,
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
		ConnContext:       connlimit.ConnContext,
	}
}

// drain lets in-flight requests and tunnels finish for at most
// Config.ShutdownTimeout, then cuts what remains: cancelling the base
// context stops the upstream requests (the transport then releases their
// tickets), and closing the servers and tunnels drops their connections.
func (s *Server) drain(servers []*http.Server, fast *proxyloop.Loop) {
	drainCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(func() { _ = srv.Shutdown(drainCtx) })
	}
	if fast != nil {
		wg.Go(func() { fast.Shutdown(drainCtx) })
	}
	wg.Go(func() { s.tunnels.wait(drainCtx) })
	wg.Wait()
	if drainCtx.Err() != nil {
		s.log.Warn("server: in-flight work did not finish in time; cutting it", "drain", s.cfg.ShutdownTimeout)
	}
	s.cancelBase()
	for _, srv := range servers {
		_ = srv.Close()
	}
	if fast != nil {
		fast.Close()
	}
	s.tunnels.closeAll()
	s.tunnels.waitAll()
}

// activity counts running handlers. It is not a sync.WaitGroup because
// handlers may start while Serve waits (a connection accepted just before
// the listener closed), which a WaitGroup does not allow.
type activity struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

func (a *activity) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.n++
		a.mu.Unlock()
		defer a.leave()
		h.ServeHTTP(w, r)
	})
}

func (a *activity) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n--
	if a.n == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
}

// wait reports whether every handler returned before ctx ended.
func (a *activity) wait(ctx context.Context) bool {
	a.mu.Lock()
	if a.n == 0 {
		a.mu.Unlock()
		return true
	}
	if a.idle == nil {
		a.idle = make(chan struct{})
	}
	ch := a.idle
	a.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// refuseSmuggling answers 400 and closes the connection of a request that
// came with both Content-Length and Transfer-Encoding (see
// connlimit.BothFramings).
func refuseSmuggling(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if connlimit.BothFramings(r) {
			w.Header().Set("Connection", "close")
			writeAPIError(w, badRequest("Transfer-Encoding",
				"a request may carry Content-Length or Transfer-Encoding, not both"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
