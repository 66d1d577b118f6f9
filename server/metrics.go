package server

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/feed"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/retry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics holds the server's own Prometheus registry. Nothing is registered
// globally, so two servers in one process (as in tests) never collide.
// No label ever holds an endpoint, a host name or an item id: per-endpoint
// detail is in the API, and labels stay bounded.
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.HistogramVec
	fetches     *prometheus.HistogramVec
	proxied     *prometheus.HistogramVec
	transitions *prometheus.CounterVec
	hostWakes   *prometheus.CounterVec
	fastFails   *prometheus.CounterVec
	probes      *prometheus.CounterVec
	tickets     prometheus.GaugeFunc
	expired     prometheus.Counter
	upstream    *prometheus.CounterVec
	admissions  *prometheus.CounterVec
	settlements prometheus.Counter
	pruned      *prometheus.CounterVec
	verdicts    *prometheus.CounterVec
	leading     prometheus.GaugeFunc
	term        prometheus.GaugeFunc
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(m.newHTTP(s)...)
	m.reg.MustRegister(m.newGuard(s)...)
	m.reg.MustRegister(m.newWork(s)...)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&stateCollector{s: s},
	)
	return m
}

// newHTTP makes the metrics of the daemon's own listeners: the API, fetch
// and the proxy, and the build it runs.
func (m *metrics) newHTTP(s *Server) []prometheus.Collector {
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "hostguard", Subsystem: "http", Name: "request_duration_seconds",
		Help:    "Time to serve a request to the daemon's own API (not /v1/fetch, not the proxy), by route path, method and status code.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method", "code"})
	// Upstream work takes seconds where the API takes milliseconds: in one
	// histogram either would hide the other.
	upstreamBuckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m.fetches = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "hostguard", Subsystem: "fetch", Name: "request_duration_seconds",
		Help:    "Time to serve a /v1/fetch request, upstream included, by method and status code.",
		Buckets: upstreamBuckets,
	}, []string{"method", "code"})
	m.proxied = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "hostguard", Subsystem: "proxy", Name: "request_duration_seconds",
		Help:    "Time to serve a forward-proxy request, upstream included, by method (CONNECT: the whole tunnel) and status code.",
		Buckets: upstreamBuckets,
	}, []string{"method", "code"})
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "hostguard", Name: "build_info",
		Help:        "Always 1; its labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": s.version, "go_version": runtime.Version()},
	})
	build.Set(1)
	return []prometheus.Collector{m.requests, m.fetches, m.proxied, build}
}

// newGuard makes the metrics of the connectivity guard, of the upstream
// requests it judges and of the wakes its answers cause.
func (m *metrics) newGuard(s *Server) []prometheus.Collector {
	m.probes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "guard", Name: "probes_total",
		Help: "Recovery probes the guard sent on its own, by result: answered, failed (host-level) or inconclusive.",
	}, []string{"result"})
	for _, r := range []string{probeAnswered, probeFailed, probeInconclusive} {
		m.probes.WithLabelValues(r)
	}
	m.hostWakes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "retry", Name: "host_wake_calls_total",
		Help: "Wakes of a host's parked retry items this node ran after the host answered again, by result: woke (it moved items), none, failed, or dropped (too many hosts queued).",
	}, []string{"result"})
	for _, r := range []string{"woke", "none", "failed", "dropped"} {
		m.hostWakes.WithLabelValues(r)
	}
	m.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "guard", Name: "transitions_total",
		Help: "Connectivity guard state transitions, by the state left and the state entered.",
	}, []string{"from", "to"})
	m.fastFails = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "guard", Name: "fast_fails_total",
		Help: "Requests refused without network work because their endpoint was open, by where they came in (acquire, fetch, proxy).",
	}, []string{"via"})
	m.tickets = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "hostguard", Subsystem: "guard", Name: "remote_tickets",
		Help: "Tickets handed out by POST /v1/guard/acquire and not yet reported.",
	}, func() float64 { return float64(s.tickets.len()) })
	m.expired = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "guard", Name: "remote_tickets_expired_total",
		Help: "Remote tickets released as inconclusive because their lease ended unreported.",
	})
	m.upstream = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "upstream", Name: "requests_total",
		Help: "Fetch and proxy requests by where they came in and how they ended (answered, fast_fail, policy, or a failure class).",
	}, []string{"via", "result"})
	return []prometheus.Collector{m.probes, m.hostWakes, m.transitions, m.fastFails, m.tickets, m.expired, m.upstream}
}

// newWork makes the metrics of the budget, the leader's periodic work and
// the evidence book.
func (m *metrics) newWork(s *Server) []prometheus.Collector {
	m.admissions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "budget", Name: "admissions_total",
		Help: "Budget admissions, through the API and the leader's own feed polls, by kind of work and result (granted, exhausted, paced, paused, disabled, unknown_source, error).",
	}, []string{"kind", "result"})
	m.settlements = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "budget", Name: "settlements_total",
		Help: "Byte reservations settled through the API.",
	})
	m.pruned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "leader", Name: "pruned_rows_total",
		Help: "Rows this node's maintenance deleted while it led, by what they held (budget usage, retry done items, evidence).",
	}, []string{"what"})
	m.verdicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "hostguard", Subsystem: "evidence", Name: "verdicts_total",
		Help: "Verdicts recorded through the API, by verdict.",
	}, []string{"verdict"})
	m.leading = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "hostguard", Subsystem: "leader", Name: "leading",
		Help: "1 while this node leads and runs the periodic work (feed polls, pruning), else 0.",
	}, func() float64 {
		if s.leading.Load() {
			return 1
		}
		return 0
	})
	m.term = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "hostguard", Subsystem: "leader", Name: "term",
		Help: "The election term this node leads in; 0 when it does not lead or there is no election.",
	}, func() float64 {
		if s.cfg.Elector == nil {
			return 0
		}
		return float64(s.cfg.Elector.Term())
	})
	return []prometheus.Collector{m.admissions, m.settlements, m.pruned, m.verdicts, m.leading, m.term}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// instrument times one route. The labels are the pattern it was
// registered under, split into its method and its path, never the raw
// path, which would carry item ids and host names. /v1/fetch has a
// histogram of its own.
func (m *metrics) instrument(pattern string, next http.Handler) http.Handler {
	method, route, ok := strings.Cut(pattern, " ")
	if !ok {
		method, route = "", pattern
	}
	if route == "/v1/fetch" {
		return m.time(m.fetches.MustCurryWith(prometheus.Labels{"method": method}), next)
	}
	return m.time(m.requests.MustCurryWith(prometheus.Labels{"route": route, "method": method}), next)
}

// timeProxy times the forward proxy, by method. The timed handlers are
// made once, one per method label: currying the histogram per request
// was a good part of the proxy's allocations.
func (m *metrics) timeProxy(next http.Handler) http.Handler {
	timed := make(map[string]http.Handler, len(proxyMethods))
	for _, method := range proxyMethods {
		timed[method] = m.time(m.proxied.MustCurryWith(prometheus.Labels{"method": method}), next)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		timed[boundedMethod(r.Method)].ServeHTTP(w, r)
	})
}

// proxyMethods are the values boundedMethod returns.
var proxyMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace, "other"}

// boundedMethod is the method as a label: a client may send any token as
// a method, and labels stay bounded.
func boundedMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// statusLabel is code as a label value, from a closed set: the codes
// net/http names, else the class ("2xx"), else "other". An upstream's
// status passes through the proxy and the fetch route as it is, and a
// label per odd code would let any upstream grow /metrics without bound.
func statusLabel(code int) string {
	if code >= 0 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return "other"
}

// statusLabels holds every value statusLabel returns for 0-599, made once
// so that labelling a request allocates nothing.
var statusLabels = func() (l [600]string) {
	for code := range l {
		switch {
		case http.StatusText(code) != "":
			l[code] = strconv.Itoa(code)
		case code >= 100:
			l[code] = strconv.Itoa(code/100) + "xx"
		default:
			l[code] = "other"
		}
	}
	return l
}()

// time observes how long next takes, by status code, in h.
func (m *metrics) time(h prometheus.ObserverVec, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			code := rec.code
			if code == 0 {
				code = http.StatusOK
			}
			h.WithLabelValues(statusLabel(code)).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(rec, r)
	})
}

// countingBudget counts the admissions the daemon's own feed clients ask
// for (caps requests), as the API's are counted.
type countingBudget struct {
	*budget.Budget
	m *metrics
}

func (b countingBudget) Wait(ctx context.Context, p budget.AdmitParams) (budget.Grant, error) {
	g, err := b.Budget.Wait(ctx, p)
	if ctx.Err() == nil {
		b.m.admissions.WithLabelValues(string(p.Kind), budgetResult(err)).Inc()
	}
	return g, err
}

// countingAdmitter counts the page admissions of the leader's feed polls.
type countingAdmitter struct {
	inner feed.Admitter // feed.BudgetAdmitter, which marks exhaustion too
	m     *metrics
}

func (a countingAdmitter) AdmitPage(ctx context.Context, source string, head bool) error {
	err := a.inner.AdmitPage(ctx, source, head)
	if ctx.Err() == nil {
		kind := budget.KindGapPage
		if head {
			kind = budget.KindHeadPoll
		}
		a.m.admissions.WithLabelValues(string(kind), budgetResult(err)).Inc()
	}
	return err
}

func (a countingAdmitter) MarkExhausted(ctx context.Context, source string, until time.Time) error {
	if em, ok := a.inner.(feed.ExhaustionMarker); ok {
		return em.MarkExhausted(ctx, source, until)
	}
	return nil
}

// statusRecorder remembers the status code. Unwrap lets
// http.ResponseController reach Flush on the real writer, which the
// streaming fetch route needs.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// noteStatus tells the statusRecorder around w, if there is one, the
// status of an answer written past it, on a hijacked connection.
func noteStatus(w http.ResponseWriter, code int) {
	for {
		if r, ok := w.(*statusRecorder); ok {
			if r.code == 0 {
				r.code = code
			}
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// stateCollector reads the guard, the host tracker and the retry queue at
// scrape time, so the figures are never stale and nothing is counted twice.
type stateCollector struct{ s *Server }

var (
	descEndpoints = prometheus.NewDesc("hostguard_guard_endpoints",
		"Endpoint records held by the connectivity guard, by state: closed, open, half-open (a trial or probe can run now) and trial (a trial or the guard's probe is out).", []string{"state"}, nil)
	descTrialWaits = prometheus.NewDesc("hostguard_guard_trial_waits_total",
		"Requests that found an endpoint's half-open trial out and waited for its outcome (guard.trial_wait), by outcome: admitted (the trial was answered, and they went out) or refused.", []string{"outcome"}, nil)
	descHosts = prometheus.NewDesc("hostguard_health_hosts",
		"Hosts the tracker knows (known), those with a failure since their last success (unhealthy), and those in backoff now (backoff).", []string{"view"}, nil)
	descItems = prometheus.NewDesc("hostguard_retry_items",
		"Retry queue items by state.", []string{"state"}, nil)
	descDue = prometheus.NewDesc("hostguard_retry_due_items",
		"Retry queue items due now: pending and scheduled items whose time has come (leases that ran out are not counted).", nil, nil)
	descLeasesExpired = prometheus.NewDesc("hostguard_retry_expired_leases",
		"Leased retry items whose lease ran out with no worker settling or extending it; a claim takes them again. Many mean workers die or hang.", nil, nil)
	descLag = prometheus.NewDesc("hostguard_retry_oldest_due_lag_seconds",
		"How long the longest-waiting due item has been due; growing means workers fall behind.", nil, nil)
	descPruned = prometheus.NewDesc("hostguard_retry_pruned_items_total",
		"Done retry items retention deleted, by every node sharing the store, ever.", nil, nil)
	descPrunedAt = prometheus.NewDesc("hostguard_retry_last_prune_timestamp_seconds",
		"When retention last deleted done retry items, on any node (Unix time; 0: never).", nil, nil)
	descWaitingClaims = prometheus.NewDesc("hostguard_retry_waiting_claims",
		"Claims on this node waiting for work (idle workers), at scrape.", nil, nil)
	descHostWakes = prometheus.NewDesc("hostguard_retry_host_wakes_total",
		"Wakes that made a host's parked retry items due because it answered again, by every node sharing the store, ever.", nil, nil)
	descHostWoken = prometheus.NewDesc("hostguard_retry_host_woken_items_total",
		"Retry items those wakes made due, by every node sharing the store, ever.", nil, nil)
	descFeedForgotten = prometheus.NewDesc("hostguard_feed_forgotten_ids_total",
		"Remembered item ids this node's syncs of a feed dropped, by the per-feed cap or by age, since the daemon started.", []string{"feed"}, nil)
	descFeedItems = prometheus.NewDesc("hostguard_feed_items_seen_total",
		"New items this node's loop found in a feed since the daemon started.", []string{"feed"}, nil)
	descFeedGaps = prometheus.NewDesc("hostguard_feed_gaps",
		"Unread stretches of a feed as of this node's last sync.", []string{"feed"}, nil)
	descFeedLastSync = prometheus.NewDesc("hostguard_feed_last_sync_timestamp_seconds",
		"When this node's last sync of a feed ended, whatever its outcome (Unix time; 0: never).", []string{"feed"}, nil)
	descFeedFailures = prometheus.NewDesc("hostguard_feed_failures_total",
		"Syncs of a feed on this node that ended with an error since the daemon started (a source's temporary refusal is not one).", []string{"feed"}, nil)
	descFeedLastSuccess = prometheus.NewDesc("hostguard_feed_last_success_timestamp_seconds",
		"When this node's last sync of a feed that ended with neither an error nor a refusal ended (Unix time; 0: never).", []string{"feed"}, nil)
	descEvidence = prometheus.NewDesc("hostguard_evidence_subjects",
		"Subjects with a definitive verdict in the last computed evidence set, by verdict.", []string{"verdict"}, nil)
	descScrapeErrors = prometheus.NewDesc("hostguard_state_scrape_errors",
		"1 when a part of the state (hosts, items) could not be read for this scrape.", []string{"part"}, nil)
)

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 5 * time.Second

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEndpoints, descTrialWaits, descHosts, descItems, descDue, descLag, descScrapeErrors,
		descPruned, descPrunedAt, descHostWakes, descHostWoken, descWaitingClaims, descFeedItems, descFeedGaps, descFeedLastSync, descFeedLastSuccess, descFeedFailures,
		descFeedForgotten, descEvidence} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	counts := map[string]int{guard.Closed.String(): 0, guard.Open.String(): 0, guard.HalfOpen.String(): 0, stateTrial: 0}
	for _, e := range s.guard.Endpoints() {
		counts[endpointState(e)]++
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(descEndpoints, prometheus.GaugeValue, float64(n), state)
	}
	waits := s.guard.TrialWaits()
	ch <- prometheus.MustNewConstMetric(descTrialWaits, prometheus.CounterValue, float64(waits.Admitted), "admitted")
	ch <- prometheus.MustNewConstMetric(descTrialWaits, prometheus.CounterValue, float64(waits.Refused), "refused")
	ch <- prometheus.MustNewConstMetric(descTrialWaits, prometheus.CounterValue, float64(waits.GaveUp), "gave_up")
	// Feed names come from the owner's configuration, so they are a
	// bounded label set, unlike endpoints or hosts.
	for _, f := range s.feedRunners() {
		for _, st := range f.loop.Status() {
			last := 0.0
			if !st.LastSync.IsZero() {
				last = float64(st.LastSync.UnixNano()) / 1e9
			}
			ch <- prometheus.MustNewConstMetric(descFeedItems, prometheus.CounterValue, float64(st.Items), st.Name)
			ch <- prometheus.MustNewConstMetric(descFeedGaps, prometheus.GaugeValue, float64(st.Gaps), st.Name)
			ch <- prometheus.MustNewConstMetric(descFeedLastSync, prometheus.GaugeValue, last, st.Name)
			ch <- prometheus.MustNewConstMetric(descFeedLastSuccess, prometheus.GaugeValue, unixSeconds(st.LastSuccess), st.Name)
			ch <- prometheus.MustNewConstMetric(descFeedFailures, prometheus.CounterValue, float64(st.Failures), st.Name)
			ch <- prometheus.MustNewConstMetric(descFeedForgotten, prometheus.CounterValue, float64(st.Forgotten), st.Name)
		}
	}
	if b := s.cfg.Evidence; b != nil {
		// Snapshot never waits for the store; a stale set starts a refresh.
		avail, unavail := evidenceCounts(b.Snapshot())
		ch <- prometheus.MustNewConstMetric(descEvidence, prometheus.GaugeValue, float64(avail), "available")
		ch <- prometheus.MustNewConstMetric(descEvidence, prometheus.GaugeValue, float64(unavail), "unavailable")
	}
	ctx, cancel := context.WithTimeout(s.baseCtx, scrapeTimeout)
	defer cancel()
	if h := s.cfg.Health; h != nil {
		hc, err := h.Counts(ctx)
		failed := 0.0
		if err != nil {
			failed = 1
			s.log.Warn("server: reading host counts for metrics failed", "err", err)
		} else {
			ch <- prometheus.MustNewConstMetric(descHosts, prometheus.GaugeValue, float64(hc.Known), "known")
			ch <- prometheus.MustNewConstMetric(descHosts, prometheus.GaugeValue, float64(hc.Unhealthy), "unhealthy")
			ch <- prometheus.MustNewConstMetric(descHosts, prometheus.GaugeValue, float64(hc.Backoff), "backoff")
		}
		ch <- prometheus.MustNewConstMetric(descScrapeErrors, prometheus.GaugeValue, failed, "hosts")
	}
	if r := s.cfg.Retry; r != nil {
		st, err := r.Stats(ctx)
		failed := 0.0
		if err != nil {
			failed = 1
			s.log.Warn("server: reading queue statistics for metrics failed", "err", err)
		} else {
			for _, state := range retry.States {
				ch <- prometheus.MustNewConstMetric(descItems, prometheus.GaugeValue, float64(st.ByState[state.String()]), state.String())
			}
			ch <- prometheus.MustNewConstMetric(descDue, prometheus.GaugeValue, float64(st.DueNow))
			ch <- prometheus.MustNewConstMetric(descLeasesExpired, prometheus.GaugeValue, float64(st.LeasesExpired))
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, st.OldestDueLag.Seconds())
			ch <- prometheus.MustNewConstMetric(descPruned, prometheus.CounterValue, float64(st.Pruned))
			ch <- prometheus.MustNewConstMetric(descPrunedAt, prometheus.GaugeValue, unixSeconds(st.PrunedAt))
			ch <- prometheus.MustNewConstMetric(descHostWakes, prometheus.CounterValue, float64(st.HostWakes))
			ch <- prometheus.MustNewConstMetric(descHostWoken, prometheus.CounterValue, float64(st.HostWoken))
		}
		ch <- prometheus.MustNewConstMetric(descWaitingClaims, prometheus.GaugeValue, float64(r.Waiting()))
		ch <- prometheus.MustNewConstMetric(descScrapeErrors, prometheus.GaugeValue, failed, "items")
	}
}

// stateTrial is the state the metrics and the status page give a
// half-open endpoint whose one trial (or the guard's probe) is out: no
// other request can try it now, unlike a half-open one.
const stateTrial = "trial"

// endpointState is e's state as the metrics and the status page name it.
func endpointState(e guard.EndpointStatus) string {
	if e.State == guard.HalfOpen && e.TrialOut {
		return stateTrial
	}
	return e.State.String()
}

// unixSeconds is t as Unix seconds; 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
