package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// HostSpec says how one simulated host behaves during a run.
type HostSpec struct {
	Kind     Kind
	Latency  time.Duration // delay before answering while up
	Status   int           // status answered while up
	Schedule Schedule      // outages; Dead and Refused hosts have one that never ends
}

// host modes, switched by the host's own schedule goroutine.
const (
	modeUp int32 = iota
	modeHang
	modeRefuse
)

// Host is one simulated host listening on 127.0.0.1. Every behaviour,
// including "dead" and "refused", is one HTTP server whose mode follows the
// spec's schedule: hanging keeps the listener and never answers, refusing
// closes the listener (and every open connection) so that dials are refused.
type Host struct {
	spec    HostSpec
	addr    string
	start   time.Time
	srv     *http.Server
	mode    atomic.Int32
	reached atomic.Int64
	done    chan struct{}
	wg      sync.WaitGroup

	mu     sync.Mutex
	ln     net.Listener // nil while refusing
	conns  map[net.Conn]struct{}
	closed bool
	errs   []error // relisten failures, reported by Close
}

// StartHost binds a port on 127.0.0.1 and follows spec's schedule, with
// offsets counted from start. Close stops it.
func StartHost(spec HostSpec, start time.Time) (*Host, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fleet: listen: %w", err)
	}
	h := &Host{
		spec:  spec,
		addr:  ln.Addr().String(),
		start: start,
		done:  make(chan struct{}),
		conns: make(map[net.Conn]struct{}),
	}
	h.srv = &http.Server{
		Handler:           http.HandlerFunc(h.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         h.track,
	}
	h.mu.Lock()
	h.ln = ln
	h.serve(ln)
	h.mu.Unlock()
	// An outage from the very start must hold before anyone can dial.
	if o, down := spec.Schedule.At(0); down {
		if o.Hang {
			h.mode.Store(modeHang)
		} else {
			h.refuse()
		}
	}
	h.wg.Add(1)
	go h.follow()
	return h, nil
}

// URL is the base URL of the host.
func (h *Host) URL() string { return "http://" + h.addr }

// Spec returns what the host was started with.
func (h *Host) Spec() HostSpec { return h.spec }

// Reached counts requests whose headers the host read, in any mode.
func (h *Host) Reached() int64 { return h.reached.Load() }

// Close stops the host and waits for its goroutines. It returns an error
// if the host could not take its port back after a refusing outage.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.done)
	h.mu.Unlock()
	err := h.srv.Close()
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	return errors.Join(append(h.errs, err)...)
}

// serve runs the server on ln; h.mu must be held.
func (h *Host) serve(ln net.Listener) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		_ = h.srv.Serve(ln) // returns when ln is closed, by an outage or by Close
	}()
}

func (h *Host) track(c net.Conn, s http.ConnState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch s {
	case http.StateNew:
		h.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(h.conns, c)
	}
}

// follow applies the schedule until the host is closed.
func (h *Host) follow() {
	defer h.wg.Done()
	for _, o := range h.spec.Schedule {
		if !h.sleepUntil(o.From) {
			return
		}
		if o.Hang {
			h.mode.Store(modeHang)
		} else {
			h.refuse()
		}
		if o.To == Forever || !h.sleepUntil(o.To) {
			return
		}
		h.up()
	}
}

func (h *Host) sleepUntil(at time.Duration) bool {
	t := time.NewTimer(time.Until(h.start.Add(at)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.done:
		return false
	}
}

func (h *Host) refuse() {
	h.mode.Store(modeRefuse)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ln != nil {
		_ = h.ln.Close()
		h.ln = nil
	}
	// Established connections must go too, or a client's kept-alive
	// connection would still reach a host that is meant to be gone.
	for c := range h.conns {
		_ = c.Close()
	}
}

func (h *Host) up() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ln == nil && !h.closed {
		ln, err := relisten(h.addr, h.done)
		switch {
		case err != nil:
			h.errs = append(h.errs, err)
		case ln != nil: // nil: the host was closed meanwhile
			h.ln = ln
			h.serve(ln)
		}
	}
	h.mode.Store(modeUp)
}

// relisten takes the host's port back. The port was free a moment ago, but
// a client socket may briefly hold it, so it tries for a little while.
func relisten(addr string, done <-chan struct{}) (net.Listener, error) {
	var err error
	for range 100 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		select {
		case <-done:
			return nil, nil
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("fleet: host %s could not listen again after an outage: %w", addr, err)
}

func (h *Host) serveHTTP(w http.ResponseWriter, r *http.Request) {
	h.reached.Add(1)
	if h.mode.Load() != modeUp {
		h.wait(r.Context(), Forever)
		return
	}
	if h.spec.Latency > 0 && !h.wait(r.Context(), h.spec.Latency) {
		return
	}
	status := h.spec.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"categories":[]}`))
}

// wait sleeps for d and reports whether it slept the whole time; it stops
// early when the client goes away or the host closes.
func (h *Host) wait(ctx context.Context, d time.Duration) bool {
	if d == Forever {
		select {
		case <-ctx.Done():
		case <-h.done:
		}
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-h.done:
		return false
	}
}
