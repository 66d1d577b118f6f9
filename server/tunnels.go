package server

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tunnel is one CONNECT tunnel: the hijacked client connection and the
// connection to the target.
type tunnel struct {
	client, up net.Conn
	// timeout is the tunnel's header timeout: the hint's, else the
	// daemon's.
	timeout time.Duration
	once    sync.Once
	closed  atomic.Bool
}

// close closes both sides; it is safe to call more than once and from
// either copier.
func (t *tunnel) close() {
	t.once.Do(func() {
		t.closed.Store(true)
		_ = t.client.Close()
		_ = t.up.Close()
	})
}

func (t *tunnel) isClosed() bool { return t.closed.Load() }

// tunnelSet tracks live tunnels. http.Server.Shutdown neither waits for
// nor closes hijacked connections, so the server does both itself.
type tunnelSet struct {
	mu       sync.Mutex
	m        map[*tunnel]struct{}
	wg       sync.WaitGroup
	stopping bool
}

// add registers t; it returns false once shutdown has begun.
func (ts *tunnelSet) add(t *tunnel) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.stopping {
		return false
	}
	if ts.m == nil {
		ts.m = make(map[*tunnel]struct{})
	}
	ts.m[t] = struct{}{}
	ts.wg.Add(1)
	return true
}

func (ts *tunnelSet) done(t *tunnel) {
	ts.mu.Lock()
	delete(ts.m, t)
	ts.mu.Unlock()
	ts.wg.Done()
}

func (ts *tunnelSet) len() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.m)
}

// wait refuses new tunnels and waits until the live ones end or ctx does.
func (ts *tunnelSet) wait(ctx context.Context) {
	ts.mu.Lock()
	ts.stopping = true
	ts.mu.Unlock()
	done := make(chan struct{})
	go func() {
		ts.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// closeAll cuts every live tunnel.
func (ts *tunnelSet) closeAll() {
	ts.mu.Lock()
	ts.stopping = true
	live := make([]*tunnel, 0, len(ts.m))
	for t := range ts.m {
		live = append(live, t)
	}
	ts.mu.Unlock()
	for _, t := range live {
		t.close()
	}
}

// waitAll waits for every tunnel's handler to return.
func (ts *tunnelSet) waitAll() { ts.wg.Wait() }
