package server

import (
	"context"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/retry"
)

// A host that answers again wakes the retry items parked behind it
// (retry.Scheduler.WakeHost). The daemon learns of it in two places: a
// successful touch of the host tracker (POST /v1/hosts/{name}/touch) and a
// guard endpoint closing because the host answered (guard.ChangeAnswered,
// seen through the guard's Sharer: see watchAnswers). Neither
// path waits for the wake: the touch answers and the proxy forwards as
// before, and a queue runs the wakes one at a time on a goroutine of its
// own, a host that is queued already not queued twice.
//
// The wake is one statement on the shared database, so it runs on the node
// that saw the answer; claims waiting on every node hear of it through the
// retry store's notifications, as of any write. A host several nodes saw
// answer (each node's guard closing its own endpoint, several workers
// touching it) is woken once by each, harmlessly: a wake leaves items due
// within the jitter alone, so the later ones find nothing.

// maxQueuedWakes bounds the hosts waiting for their wake. Beyond it a
// host's wake is dropped (and logged): its items keep their ladder's wait,
// which is what they did before wakes existed.
const maxQueuedWakes = 4096

// wakeTimeout bounds one wake's statement.
const wakeTimeout = 30 * time.Second

type hostWaker struct {
	retry *retry.Scheduler
	s     *Server

	mu     sync.Mutex
	queued map[string]bool
	order  []string
	kick   chan struct{} // buffer 1: work queued
	done   chan struct{}
}

// startHostWaker starts the wake queue when the server has a retry queue.
func (s *Server) startHostWaker() {
	if s.cfg.Retry == nil {
		return
	}
	s.wakes = &hostWaker{retry: s.cfg.Retry, s: s, queued: map[string]bool{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go s.wakes.run()
}

// wakeHost queues the wake of host's parked items. name is a host name,
// with or without a port; one that is no host name (the tracker takes any
// name) wakes nothing.
func (s *Server) wakeHost(name string) {
	w := s.wakes
	if w == nil {
		return
	}
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	host, err := retry.NormalizeHost(name)
	if err != nil || host == "" {
		return
	}
	w.mu.Lock()
	switch {
	case w.queued[host]:
	case len(w.order) >= maxQueuedWakes:
		w.mu.Unlock()
		s.metrics.hostWakes.WithLabelValues("dropped").Inc()
		s.log.Warn("server: too many hosts waiting for their wake; dropped one", "host", host)
		return
	default:
		w.queued[host] = true
		w.order = append(w.order, host)
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// watchAnswers returns next (nil for none) with the guard's answers
// observed: an endpoint of this guard's own that closes because the host
// answered (guard.ChangeAnswered: a trial's answer, a probe's, or a late
// answer to a request admitted before the opening) wakes its host's
// items. A reset publishes ChangeReset and wakes nothing; an answer
// another node published comes in through guard.Apply, not Publish, so the
// cluster wakes once per answer. A Claimer stays one.
func (s *Server) watchAnswers(next guard.Sharer) guard.Sharer {
	w := answerWatch{next: next, s: s}
	if c, ok := next.(guard.Claimer); ok {
		return answerWatchClaimer{answerWatch: w, claimer: c}
	}
	return w
}

type answerWatch struct {
	next guard.Sharer
	s    *Server
}

// Publish implements guard.Sharer. It queues the wake; it never waits.
func (a answerWatch) Publish(t guard.Transition) {
	if t.Change == guard.ChangeAnswered {
		if u, err := url.Parse(t.Endpoint); err == nil {
			a.s.wakeHost(u.Hostname())
		}
	}
	if a.next != nil {
		a.next.Publish(t)
	}
}

type answerWatchClaimer struct {
	answerWatch
	claimer guard.Claimer
}

// Claim implements guard.Claimer: the wrapped Sharer's lease.
func (a answerWatchClaimer) Claim(ctx context.Context, p guard.ClaimParams) (guard.Lease, error) {
	return a.claimer.Claim(ctx, p)
}

func (w *hostWaker) run() {
	defer close(w.done)
	for {
		select {
		case <-w.s.stop:
			return
		case <-w.kick:
		}
		for {
			w.mu.Lock()
			if len(w.order) == 0 {
				w.mu.Unlock()
				break
			}
			host := w.order[0]
			w.order = w.order[1:]
			delete(w.queued, host)
			w.mu.Unlock()
			w.wake(host)
			select {
			case <-w.s.stop:
				return
			default:
			}
		}
	}
}

func (w *hostWaker) wake(host string) {
	ctx, cancel := context.WithTimeout(w.s.baseCtx, wakeTimeout)
	defer cancel()
	res, err := w.retry.WakeHost(ctx, host)
	switch {
	case err != nil:
		w.s.metrics.hostWakes.WithLabelValues("failed").Inc()
		w.s.log.Warn("server: waking a host's parked items failed", "host", host, "err", err)
	case res.Woken > 0:
		w.s.metrics.hostWakes.WithLabelValues("woke").Inc()
		w.s.log.Info("server: a host answered again; its parked items are due", "host", host, "items", res.Woken)
	default:
		w.s.metrics.hostWakes.WithLabelValues("none").Inc()
	}
}
