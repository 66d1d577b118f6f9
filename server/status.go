package server

import (
	"context"
	"net/http"
	"regexp"
	"sort"
	"unicode/utf8"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/health"
)

// statusHostLimit bounds the hosts each list of the status report holds;
// the counts are always complete, and GET /v1/hosts pages through the rest.
const statusHostLimit = 100

func (s *Server) statusReport(ctx context.Context) api.Status {
	now := s.cfg.Now()
	rep := api.Status{
		Time: now.UTC(), Version: s.version, Store: s.cfg.StoreKind,
		StartedAt: s.started.UTC(), UptimeSeconds: now.Sub(s.started).Seconds(),
	}
	if el := s.cfg.Elector; el != nil {
		rep.Node = el.NodeID()
	}
	rep.Guard = s.guardSummary()
	if h := s.cfg.Health; h != nil {
		hs, err := s.hostSummary(ctx, h)
		if err != nil {
			s.log.Error("server: reading hosts for the status report failed", "err", err)
			rep.Problems = append(rep.Problems, "hosts could not be read")
		} else {
			rep.Hosts = hs
		}
	}
	if r := s.cfg.Retry; r != nil {
		q, err := s.due.get(ctx, func(ctx context.Context) (queueSnapshot, error) {
			st, due, err := r.StatsAndDue(ctx)
			return queueSnapshot{Stats: st, Due: due}, err
		})
		if err != nil {
			s.log.Error("server: reading the retry queue for the status report failed", "err", err)
			rep.Problems = append(rep.Problems, "the retry queue could not be read")
		} else {
			rep.Items, rep.ItemsDue = &api.QueueStats{Stats: q.Stats}, &q.Due
		}
	}
	if b := s.cfg.Budget; b != nil {
		br, err := b.Report(ctx)
		if err != nil {
			s.log.Error("server: reading the budget for the status report failed", "err", err)
			rep.Problems = append(rep.Problems, "the budget could not be read")
		} else {
			rep.Budget = newBudgetView(br)
		}
	}
	lv, err := s.leaderStatus(ctx)
	if err != nil {
		s.log.Error("server: reading the leader lease for the status report failed", "err", err)
		rep.Problems = append(rep.Problems, "the leader lease could not be read")
	}
	rep.Leader = lv
	if s.feedReader != nil {
		views, err := s.feedViews(ctx)
		if err != nil {
			s.log.Error("server: reading feed positions for the status report failed", "err", err)
			rep.Problems = append(rep.Problems, "the feeds could not be read")
		} else {
			for i := range views {
				views[i].LastError = shortError(views[i].LastError)
			}
			rep.Feeds = views
		}
	}
	if b := s.cfg.Evidence; b != nil {
		snap := b.Snapshot()
		es := &api.StatusEvidence{Fingerprint: b.CurrentFingerprint(), Known: snap.Known(), ComputedAt: timePtr(snap.ComputedAt())}
		es.Available, es.Unavailable = evidenceCounts(snap)
		rep.Evidence = es
	}
	return rep
}

func (s *Server) guardSummary() api.StatusGuard {
	all := s.guard.Endpoints()
	g := api.StatusGuard{
		Endpoints: len(all),
		ByState: map[string]int{
			guard.Closed.String(): 0, guard.Open.String(): 0, guard.HalfOpen.String(): 0,
		},
		RemoteTickets: s.tickets.len(),
		NotClosed:     []api.StatusEndpoint{},
	}
	for _, st := range all {
		g.ByState[st.State.String()]++
		if st.State == guard.Closed {
			continue
		}
		e := api.StatusEndpoint{Endpoint: newEndpointView(st), Probing: st.Probing, Openings: st.Openings}
		switch {
		case st.State == guard.HalfOpen && !st.OpenUntil.IsZero():
			e.Since = timePtr(st.OpenUntil)
		case st.State == guard.Open && !st.OpenedAt.IsZero():
			e.Since = timePtr(st.OpenedAt)
		}
		g.NotClosed = append(g.NotClosed, e)
	}
	// Open endpoints first, those closest to their trial first.
	sort.SliceStable(g.NotClosed, func(i, j int) bool {
		return g.NotClosed[i].RetryAfterSeconds > g.NotClosed[j].RetryAfterSeconds
	})
	return g
}

func (s *Server) hostSummary(ctx context.Context, h *health.Tracker) (*api.StatusHosts, error) {
	counts, err := h.Counts(ctx)
	if err != nil {
		return nil, err
	}
	backoff, err := h.List(ctx, health.ListParams{View: health.Backoff, Limit: statusHostLimit})
	if err != nil {
		return nil, err
	}
	unhealthy, err := h.List(ctx, health.ListParams{View: health.Unhealthy, Limit: statusHostLimit})
	if err != nil {
		return nil, err
	}
	hs := &api.StatusHosts{Counts: counts, InBackoff: make([]api.Host, 0, len(backoff)),
		UnhealthyHosts: make([]api.StatusHost, 0, len(unhealthy))}
	for _, st := range backoff {
		hs.InBackoff = append(hs.InBackoff, newHostView(st))
	}
	for _, st := range unhealthy {
		recent := s.hosts.recent(st.Name)
		if recent == nil {
			recent = []api.HostOutcome{}
		}
		hs.UnhealthyHosts = append(hs.UnhealthyHosts, api.StatusHost{Host: newHostView(st), Recent: recent})
	}
	// In backoff first, the longest wait first; then by name.
	sort.SliceStable(hs.UnhealthyHosts, func(i, j int) bool {
		return hs.UnhealthyHosts[i].RetryIn > hs.UnhealthyHosts[j].RetryIn
	})
	return hs, nil
}

// recordTouch adds a touch's outcome to the host's timeline.
func (s *Server) recordTouch(res health.Result, ok bool) {
	kind := outcomeSuccess
	switch {
	case !ok && res.Counted:
		kind = outcomeFailure
	case !ok:
		kind = outcomeIgnored
	}
	s.hosts.add(res.Name, kind, s.cfg.Now())
}

// urlInText finds URLs, quoted or not, in an error's text.
var urlInText = regexp.MustCompile(`"?[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"]*"?`)

// shortError is an error's text as the dashboard shows it: without URLs
// (which can hold a key or a query), at most shortErrorLen bytes.
func shortError(s string) string {
	const shortErrorLen = 160
	s = urlInText.ReplaceAllString(s, "(url)")
	if len(s) > shortErrorLen {
		cut := shortErrorLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func evidenceCounts(snap *evidence.Snapshot) (available, unavailable int) {
	snap.Subjects(evidence.Available, func(evidence.Summary) bool { available++; return true })
	snap.Subjects(evidence.Unavailable, func(evidence.Summary) bool { unavailable++; return true })
	return available, unavailable
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.statusReport(r.Context()))
	return nil
}
