package guard

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Guard is a circuit breaker per endpoint. Create one with New and share
// it: all methods are safe for concurrent use. The zero value is not
// usable. Acquire, the ticket's report, and Release are what most callers
// need.
type Guard struct {
	cfg Config

	records sync.Map // endpoint key -> *endpoint
	count   atomic.Int64
	serial  atomic.Uint64 // record serials; see admission

	pruneMu     sync.Mutex   // serialises sweeps and evictions, never taken on the hot path
	lastSweep   atomic.Int64 // UnixNano of the last idle sweep
	noRoomUntil atomic.Int64 // UnixNano before which makeRoom does not search again

	// Probes; see probe.go.
	ctx     context.Context // parent of every probe's context; cancelled by Close
	cancel  context.CancelFunc
	probes  atomic.Int64 // probes running
	closed  atomic.Bool
	lifeMu  sync.Mutex     // orders Close against probes starting
	running sync.WaitGroup // probe goroutines and timer callbacks
}

// New returns a Guard configured by cfg, with zero fields set to their
// defaults. It panics with the error cfg.Validate returns, and on nothing
// else: check configuration that comes from users with Validate first. A
// Guard with a Probe runs timers and goroutines of its own; Close stops
// them.
func New(cfg Config) *Guard {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	g := &Guard{cfg: cfg.withDefaults()}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.lastSweep.Store(g.cfg.Now().UnixNano())
	return g
}

// Acquire asks to contact the endpoint of rawURL. It returns a ticket the
// caller must settle: Answered when any HTTP response arrived, Failed with
// the error otherwise, and Release in a defer for every other path. While
// the endpoint is open, or half-open with its trial out, it returns an
// *OpenError instead and the request must not be sent. A URL that names no
// endpoint returns an error wrapping ErrBadURL.
//
// On a closed endpoint Acquire takes only that endpoint's lock and makes
// one allocation, the ticket.
func (g *Guard) Acquire(rawURL string) (*Ticket, error) {
	return g.acquire(rawURL, false)
}

// AcquireExempt is Acquire for requests that are expected to fail, such as
// a discovery walk over candidate paths: it is never refused, its failures
// never count and never take the trial slot, but its answers clear the
// endpoint like any other.
func (g *Guard) AcquireExempt(rawURL string) (*Ticket, error) {
	return g.acquire(rawURL, true)
}

func (g *Guard) acquire(rawURL string, exempt bool) (*Ticket, error) {
	key, err := Key(rawURL)
	if err != nil {
		return nil, err
	}
	if g.cfg.Disabled() {
		return &Ticket{key: key}, nil
	}
	for {
		ep := g.record(key, true)
		if ep == nil {
			// Every record is busy and the cap is reached: let the
			// request through untracked rather than refuse or evict
			// evidence that is in use.
			return &Ticket{key: key}, nil
		}
		if t, err, ok := g.admit(ep, exempt); ok {
			return t, err
		}
	}
}

// admit decides on one acquisition. ok is false when ep was evicted before
// its lock was taken and the caller must look the key up again.
func (g *Guard) admit(ep *endpoint, exempt bool) (t *Ticket, err error, ok bool) {
	ep.mu.Lock()
	if ep.evicted {
		ep.mu.Unlock()
		return nil, nil, false
	}
	if !ep.open || exempt {
		// The hot path: no clock read, no allocation under the lock.
		ep.seq++
		ep.out++
		ep.touched = true
		id, epoch := admission{ep.serial, ep.seq}, ep.epoch
		ep.mu.Unlock()
		return &Ticket{g: g, ep: ep, key: ep.key, id: id, epoch: epoch, exempt: exempt}, nil, true
	}
	now := g.cfg.Now()
	if now.Before(ep.openUntil) {
		retry := ep.openUntil.Sub(now)
		g.noteDemand(ep, now)
		ep.mu.Unlock()
		return nil, &OpenError{Endpoint: ep.key, RetryAfter: retry}, true
	}
	var tr transitions
	ep.observe(now, &tr)
	if ep.trial != 0 {
		ep.mu.Unlock()
		g.report(ep.key, &tr)
		return nil, &OpenError{Endpoint: ep.key}, true
	}
	if ep.demand {
		// Callers asked for the endpoint while it was open: the guard
		// tries it itself, and this caller does not wait on a host that
		// may still be down.
		if run := g.startProbe(ep); run != nil {
			ep.mu.Unlock()
			g.report(ep.key, &tr)
			go g.runProbe(run)
			return nil, &OpenError{Endpoint: ep.key}, true
		}
	}
	ep.seq++
	ep.trial = ep.seq
	ep.out++
	ep.touched = true
	id, epoch := admission{ep.serial, ep.seq}, ep.epoch
	ep.mu.Unlock()
	g.report(ep.key, &tr)
	return &Ticket{g: g, ep: ep, key: ep.key, id: id, epoch: epoch, trial: true}, nil, true
}

// Reset forgets what the guard knows against the endpoint of rawURL, for a
// user who asked to try it now: the endpoint becomes closed and reports
// from tickets acquired before the reset no longer count. It creates the
// record if there is none, and works while the guard is disabled. It is
// best effort: when every record is busy and the cap is reached there is
// nothing held for the endpoint to reset, and it returns nil.
func (g *Guard) Reset(rawURL string) error {
	key, err := Key(rawURL)
	if err != nil {
		return err
	}
	for {
		ep := g.record(key, true)
		if ep == nil {
			return nil
		}
		ep.mu.Lock()
		if ep.evicted {
			ep.mu.Unlock()
			continue
		}
		var tr transitions
		ep.observe(g.cfg.Now(), &tr)
		ep.epoch++
		ep.clear()
		ep.touched = true
		tr.add(ep, Closed)
		ep.mu.Unlock()
		g.report(ep.key, &tr)
		return nil
	}
}

// State returns the state of the endpoint of rawURL: HalfOpen as soon as
// the open period has passed, before any trial is admitted. An endpoint
// the guard holds no record for, or a URL Key rejects, is Closed. State
// reports the record also while the guard is disabled.
func (g *Guard) State(rawURL string) State {
	key, err := Key(rawURL)
	if err != nil {
		return Closed
	}
	ep := g.record(key, false)
	if ep == nil {
		return Closed
	}
	ep.mu.Lock()
	if !ep.open {
		ep.mu.Unlock()
		return Closed
	}
	now := g.cfg.Now()
	var tr transitions
	ep.observe(now, &tr)
	st := ep.state(now)
	ep.mu.Unlock()
	g.report(ep.key, &tr)
	return st
}

// Len returns the number of endpoint records held.
func (g *Guard) Len() int {
	return int(g.count.Load())
}

// record returns the record for key, creating it if create is set and the
// cap allows. It returns nil when there is none.
func (g *Guard) record(key string, create bool) *endpoint {
	if v, ok := g.records.Load(key); ok {
		return v.(*endpoint)
	}
	if !create {
		return nil
	}
	now := g.cfg.Now()
	g.maybeSweep(now)
	if !g.reserve(now) {
		return nil
	}
	ep := &endpoint{key: strings.Clone(key), serial: g.serial.Add(1), seen: now}
	if v, loaded := g.records.LoadOrStore(ep.key, ep); loaded {
		g.count.Add(-1)
		return v.(*endpoint)
	}
	return ep
}

// reserve claims room for one record, evicting to make it if needed. The
// count never exceeds MaxEndpoints, not even for a moment.
func (g *Guard) reserve(now time.Time) bool {
	if g.tryReserve() {
		return true
	}
	g.makeRoom(now)
	return g.tryReserve()
}

func (g *Guard) tryReserve() bool {
	max := int64(g.cfg.MaxEndpoints)
	for {
		n := g.count.Load()
		if n >= max {
			return false
		}
		if g.count.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// report passes queued transitions to OnTransition. Call with no lock held.
func (g *Guard) report(key string, tr *transitions) {
	if g.cfg.OnTransition == nil {
		return
	}
	for _, t := range tr.list[:tr.n] {
		g.cfg.OnTransition(key, t.from, t.to)
	}
}
