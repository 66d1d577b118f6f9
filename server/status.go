package server

import (
	"context"
	"net/http"
	"regexp"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/retry"
)

// statusHostLimit bounds the hosts each list of the status report holds;
// the counts are always complete, and GET /v1/hosts pages through the rest.
const statusHostLimit = 100

// statusReport is GET /v1/status and what the dashboard shows.
type statusReport struct {
	Time time.Time `json:"time"`
	// Version, Node, StartedAt and UptimeSeconds describe this daemon;
	// Store is the kind of store it runs on, when its program said.
	Version       string    `json:"version"`
	Node          string    `json:"node,omitempty"`
	Store         string    `json:"store,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds float64   `json:"uptime_seconds"`

	Guard guardSummary `json:"guard"`
	Hosts *hostSummary `json:"hosts,omitempty"`
	// Items and ItemsDue come from one read of the store: ItemsDue's
	// "now" bucket is Items.DueNow.
	Items *retry.Stats `json:"items,omitempty"`
	// ItemsDue counts the waiting items by when they are next due.
	ItemsDue *retry.DueHistogram `json:"items_due,omitempty"`
	// Budget is today's usage against the allowances.
	Budget *budgetView `json:"budget,omitempty"`
	// Leader says whether this node runs the periodic work.
	Leader leaderView `json:"leader"`
	// Feeds are the configured and stored feeds, each last error cut
	// to its short form.
	Feeds []feedView `json:"feeds,omitempty"`
	// Evidence counts the subjects of the last computed evidence set.
	Evidence *evidenceSummary `json:"evidence,omitempty"`
	// Problems names the parts that could not be read (a store error);
	// the rest of the report is still good.
	Problems []string `json:"problems,omitempty"`
}

type guardSummary struct {
	// Endpoints counts the records the guard holds.
	Endpoints int            `json:"endpoints"`
	ByState   map[string]int `json:"by_state"`
	// RemoteTickets counts acquired, unreported API tickets.
	RemoteTickets int `json:"remote_tickets"`
	// NotClosed lists the open and half-open endpoints.
	NotClosed []statusEndpoint `json:"not_closed"`
}

// statusEndpoint is an endpoint as the dashboard shows it: what GET
// /v1/guard says, and since when it has been in its state.
type statusEndpoint struct {
	endpointView
	// Since is when the endpoint entered its state: for half-open, the
	// end of its open period; for open, the start of it.
	Since *time.Time `json:"since,omitempty"`
	// Probing is true while the guard's own probe holds the trial.
	Probing bool `json:"probing"`
	// Openings counts the open periods in a row without an answer.
	Openings int `json:"openings"`
}

type hostSummary struct {
	health.Counts
	// InBackoff lists up to 100 hosts in backoff, by name.
	InBackoff []hostView `json:"in_backoff"`
	// UnhealthyHosts lists up to 100 hosts with a failure since their
	// last success, those in backoff first, each with the outcomes this
	// node recorded for it lately.
	UnhealthyHosts []statusHost `json:"unhealthy_hosts"`
}

type statusHost struct {
	hostView
	// Recent is up to 20 outcomes this node answered touches with since
	// it started, oldest first.
	Recent []outcomeView `json:"recent"`
}

func (s *Server) statusReport(ctx context.Context) statusReport {
	now := s.cfg.Now()
	rep := statusReport{
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
			rep.Items, rep.ItemsDue = &q.Stats, &q.Due
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
		es := &evidenceSummary{Fingerprint: b.CurrentFingerprint(), Known: snap.Known(), ComputedAt: timePtr(snap.ComputedAt())}
		es.Available, es.Unavailable = evidenceCounts(snap)
		rep.Evidence = es
	}
	return rep
}

func (s *Server) guardSummary() guardSummary {
	all := s.guard.Endpoints()
	g := guardSummary{
		Endpoints: len(all),
		ByState: map[string]int{
			guard.Closed.String(): 0, guard.Open.String(): 0, guard.HalfOpen.String(): 0,
		},
		RemoteTickets: s.tickets.len(),
		NotClosed:     []statusEndpoint{},
	}
	for _, st := range all {
		g.ByState[st.State.String()]++
		if st.State == guard.Closed {
			continue
		}
		e := statusEndpoint{endpointView: newEndpointView(st), Probing: st.Probing, Openings: st.Openings}
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

func (s *Server) hostSummary(ctx context.Context, h *health.Tracker) (*hostSummary, error) {
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
	hs := &hostSummary{Counts: counts, InBackoff: make([]hostView, 0, len(backoff)),
		UnhealthyHosts: make([]statusHost, 0, len(unhealthy))}
	for _, st := range backoff {
		hs.InBackoff = append(hs.InBackoff, newHostView(st))
	}
	for _, st := range unhealthy {
		recent := s.hosts.recent(st.Name)
		if recent == nil {
			recent = []outcomeView{}
		}
		hs.UnhealthyHosts = append(hs.UnhealthyHosts, statusHost{hostView: newHostView(st), Recent: recent})
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

// evidenceSummary is the evidence part of the status report. It comes from
// the book's last computed set, which never waits for the store; the
// figures may be up to the book's MaxAge old.
type evidenceSummary struct {
	Fingerprint string `json:"fingerprint"`
	// Known is false until the first set has been computed.
	Known       bool       `json:"known"`
	ComputedAt  *time.Time `json:"computed_at,omitempty"`
	Available   int        `json:"available"`
	Unavailable int        `json:"unavailable"`
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
