// Package faulthost starts misbehaving HTTP hosts on 127.0.0.1 for tests:
// hosts that never answer, refuse, reset, stall or trickle, each counting the
// connections and requests that reached it.
//
// Every constructor listens on 127.0.0.1:0 and panics if it cannot, the way
// net/http/httptest does, so tests read as one line per host. Call Close
// (usually through t.Cleanup) to let go of held connections; Close waits for
// every goroutine the host started.
package faulthost

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
)

// A Host is one fault host. Its methods are safe for concurrent use.
type Host struct {
	addr string
	ln   net.Listener // nil for ClosedPort: nothing listens there.

	// respond answers one request that has been read and counted. It
	// reports whether the connection may carry another request.
	respond func(h *Host, c net.Conn, req *http.Request) bool

	// done is closed by Close; hosts that hold requests wait on it.
	done chan struct{}
	// release is closed by Release; Gated hosts wait on it.
	release     chan struct{}
	releaseOnce sync.Once
	closeOnce   sync.Once
	wg          sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	conns    map[net.Conn]struct{}
	accepted int
	requests int
	// arrived is closed and replaced whenever requests grows, so Await
	// can wait for a count without polling.
	arrived chan struct{}
}

// start listens on 127.0.0.1:0 and serves every connection with respond.
func start(respond func(h *Host, c net.Conn, req *http.Request) bool) *Host {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("faulthost: listen on 127.0.0.1:0: %v", err))
	}
	h := newHost(ln.Addr().String())
	h.ln = ln
	h.respond = respond
	h.wg.Add(1)
	go h.accept()
	return h
}

func newHost(addr string) *Host {
	return &Host{
		addr:    addr,
		done:    make(chan struct{}),
		release: make(chan struct{}),
		conns:   make(map[net.Conn]struct{}),
		arrived: make(chan struct{}),
	}
}

// URL returns the host's base URL, "http://127.0.0.1:port".
func (h *Host) URL() string { return "http://" + h.addr }

// Addr returns the host's address, "127.0.0.1:port".
func (h *Host) Addr() string { return h.addr }

// Requests returns how many requests reached the host: a request counts once
// its headers have been read, before the host misbehaves.
func (h *Host) Requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests
}

// Conns returns how many connections the host accepted.
func (h *Host) Conns() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.accepted
}

// Await blocks until at least n requests have reached the host, or ctx ends.
func (h *Host) Await(ctx context.Context, n int) error {
	for {
		h.mu.Lock()
		got, arrived := h.requests, h.arrived
		h.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return fmt.Errorf("faulthost: %s saw %d of %d requests: %w", h.addr, got, n, ctx.Err())
		}
	}
}

// Release lets a Gated host answer the requests it holds and every later
// one. It is a no-op for other hosts and safe to call more than once.
func (h *Host) Release() {
	h.releaseOnce.Do(func() { close(h.release) })
}

// Close stops the host: it stops listening, closes every connection (so held
// requests end) and waits for the host's goroutines. It is idempotent.
func (h *Host) Close() {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.closed = true
		conns := make([]net.Conn, 0, len(h.conns))
		for c := range h.conns {
			conns = append(conns, c)
		}
		h.mu.Unlock()
		close(h.done)
		if h.ln != nil {
			h.ln.Close()
		}
		for _, c := range conns {
			c.Close()
		}
		h.wg.Wait()
	})
}

func (h *Host) accept() {
	defer h.wg.Done()
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return // The listener was closed.
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			c.Close()
			return
		}
		h.conns[c] = struct{}{}
		h.accepted++
		// Adding while this goroutine still holds its own count keeps
		// the WaitGroup above zero, so Close's Wait cannot miss it.
		h.wg.Add(1)
		h.mu.Unlock()
		go h.serve(c)
	}
}

// serve reads requests from c until the fault ends the connection.
func (h *Host) serve(c net.Conn) {
	defer h.wg.Done()
	defer func() {
		h.mu.Lock()
		delete(h.conns, c)
		h.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		h.mu.Lock()
		h.requests++
		close(h.arrived)
		h.arrived = make(chan struct{})
		h.mu.Unlock()
		// Drain any request body so the next request on the connection
		// starts where it should.
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		if !h.respond(h, c, req) || req.Close {
			return
		}
	}
}
