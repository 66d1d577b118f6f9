package server

import (
	"bytes"
	"context"
	_ "embed"
	"html/template"
	"net/http"
	"sort"
	"time"

	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/health"
	"github.com/hostguard/hostguard/retry"
)

// statusHostLimit bounds the hosts in backoff that the status report lists;
// the counts are always complete, and GET /v1/hosts pages through the rest.
const statusHostLimit = 100

// statusReport is GET /v1/status and what the status page shows.
type statusReport struct {
	Time  time.Time    `json:"time"`
	Guard guardSummary `json:"guard"`
	Hosts *hostSummary `json:"hosts,omitempty"`
	Items *retry.Stats `json:"items,omitempty"`
	// Budget is today's usage against the allowances.
	Budget *budgetView `json:"budget,omitempty"`
	// Leader says whether this node runs the periodic work.
	Leader leaderView `json:"leader"`
	// Feeds are the configured and stored feeds.
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
	NotClosed []endpointView `json:"not_closed"`
}

type hostSummary struct {
	health.Counts
	// InBackoff lists up to 100 hosts in backoff, by name.
	InBackoff []hostView `json:"in_backoff"`
}

func (s *Server) statusReport(ctx context.Context) statusReport {
	rep := statusReport{Time: s.cfg.Now().UTC()}
	all := s.endpoints(nil)
	rep.Guard = guardSummary{
		Endpoints: len(all),
		ByState: map[string]int{
			guard.Closed.String(): 0, guard.Open.String(): 0, guard.HalfOpen.String(): 0,
		},
		RemoteTickets: s.tickets.len(),
		NotClosed:     []endpointView{},
	}
	for _, e := range all {
		rep.Guard.ByState[e.State]++
		if e.State != guard.Closed.String() {
			rep.Guard.NotClosed = append(rep.Guard.NotClosed, e)
		}
	}
	// Open endpoints first, those closest to their trial first.
	sort.SliceStable(rep.Guard.NotClosed, func(i, j int) bool {
		return rep.Guard.NotClosed[i].RetryAfterSeconds > rep.Guard.NotClosed[j].RetryAfterSeconds
	})
	if h := s.cfg.Health; h != nil {
		counts, err := h.Counts(ctx)
		list, err2 := h.List(ctx, health.ListParams{View: health.Backoff, Limit: statusHostLimit})
		if err != nil || err2 != nil {
			s.log.Error("server: reading hosts for the status report failed", "err", firstErr(err, err2))
			rep.Problems = append(rep.Problems, "hosts could not be read")
		} else {
			hs := &hostSummary{Counts: counts, InBackoff: make([]hostView, 0, len(list))}
			for _, st := range list {
				hs.InBackoff = append(hs.InBackoff, newHostView(st))
			}
			rep.Hosts = hs
		}
	}
	if r := s.cfg.Retry; r != nil {
		st, err := r.Stats(ctx)
		if err != nil {
			s.log.Error("server: reading queue statistics for the status report failed", "err", err)
			rep.Problems = append(rep.Problems, "the retry queue could not be read")
		} else {
			rep.Items = &st
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

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.statusReport(r.Context()))
	return nil
}

//go:embed status.html
var statusHTML string

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"secs": func(f float64) string {
		if f <= 0 {
			return "now"
		}
		return (time.Duration(f * float64(time.Second))).Round(time.Second).String()
	},
	"dur": func(d time.Duration) string { return d.Round(time.Second).String() },
	"sorted": func(m map[string]int) []kv {
		out := make([]kv, 0, len(m))
		for k, v := range m {
			out = append(out, kv{k, v})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].K < out[j].K })
		return out
	},
}).Parse(statusHTML))

type kv struct {
	K string
	V int
}

// statusPage renders the report as a self-contained page that refreshes
// itself. html/template escapes every endpoint and host name, which come
// from clients.
func (s *Server) statusPage(w http.ResponseWriter, r *http.Request) error {
	var buf bytes.Buffer
	states := []string{"pending", "scheduled", "leased", "done"}
	if err := statusTemplate.Execute(&buf, struct {
		statusReport
		States []string
	}{s.statusReport(r.Context()), states}); err != nil {
		return failed("rendering the status page", err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	// Nothing on the page loads from anywhere; say so to the browser.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_, _ = w.Write(buf.Bytes())
	return nil
}
