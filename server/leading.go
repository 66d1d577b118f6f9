package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hostguard/hostguard/api"
)

// DefaultMaintainEvery is how often the leader prunes old budget usage and
// trims the evidence table when Config.MaintainEvery is 0.
const DefaultMaintainEvery = time.Hour

// firstMaintenance bounds the wait for the first maintenance after
// leadership begins, so that a daemon restarted more often than
// MaintainEvery still prunes.
const firstMaintenance = time.Minute

// runLeader runs the periodic work while this node leads: through the
// elector, or always when there is none (a single node). It returns when
// ctx ends and the work has stopped.
func (s *Server) runLeader(ctx context.Context) {
	if s.cfg.Elector == nil {
		_ = s.lead(ctx)
		return
	}
	// Run logs store errors itself and returns nil when ctx ends; lead
	// never returns before then.
	_ = s.cfg.Elector.Run(ctx, s.lead)
}

// lead is the one function the elector runs: every feed loop and the
// maintenance, until leadership (ctx) ends. An elector runs one function
// at a time, so the loops share this one.
func (s *Server) lead(ctx context.Context) error {
	s.leading.Store(true)
	defer s.leading.Store(false)
	s.log.Debug("server: leading; periodic work starts", "feeds", len(s.feedRunners()))
	var wg sync.WaitGroup
	wg.Go(func() { s.runFeeds(ctx) })
	wg.Go(func() { s.maintain(ctx) })
	wg.Wait()
	s.log.Debug("server: periodic work stopped")
	return nil
}

// maintain prunes what the stores would otherwise keep forever: budget
// usage older than the budget's KeepDays, retry items done longer than
// the scheduler's KeepDone, and evidence rows beyond the book's cap (writes trim a few; this catches up after the cap was
// lowered).
func (s *Server) maintain(ctx context.Context) {
	t := time.NewTimer(min(firstMaintenance, s.cfg.MaintainEvery))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.maintainOnce(ctx)
		t.Reset(s.cfg.MaintainEvery)
	}
}

func (s *Server) maintainOnce(ctx context.Context) {
	if b := s.cfg.Budget; b != nil {
		n, err := b.Prune(ctx)
		s.metrics.pruned.WithLabelValues("budget").Add(float64(n))
		if err != nil && ctx.Err() == nil {
			s.log.Warn("server: pruning old budget usage failed", "err", err)
		}
	}
	if r := s.cfg.Retry; r != nil {
		n, err := r.Prune(ctx)
		s.metrics.pruned.WithLabelValues("retry").Add(float64(n))
		if err != nil && ctx.Err() == nil {
			s.log.Warn("server: pruning done retry items failed", "err", err)
		}
	}
	if e := s.cfg.Evidence; e != nil {
		n, err := e.Prune(ctx)
		s.metrics.pruned.WithLabelValues("evidence").Add(float64(n))
		if err != nil && ctx.Err() == nil {
			s.log.Warn("server: pruning evidence failed", "err", err)
		}
	}
}

func (s *Server) leaderStatus(ctx context.Context) (api.Leader, error) {
	v := api.Leader{Leading: s.leading.Load()}
	el := s.cfg.Elector
	if el == nil {
		return v, nil
	}
	v.Elected, v.Node, v.Term = true, el.NodeID(), el.Term()
	l, err := el.Current(ctx)
	if err != nil {
		return v, err
	}
	v.Lease = &api.LeaderLease{Election: l.Name, Holder: l.Node, Term: l.Term, ExpiresAt: timePtr(l.ExpiresAt)}
	return v, nil
}

func (s *Server) leaderGet(w http.ResponseWriter, r *http.Request) error {
	v, err := s.leaderStatus(r.Context())
	if err != nil {
		return failed("reading the leader lease", err)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
