package server

import (
	"fmt"
	"net/http"

	"github.com/hostguard/hostguard/retry"
)

// route is one operation of the API, as docs/api.md lists them.
type route struct {
	pattern string
	h       handlerFunc
	// public routes are served without the token: the probes, and the
	// login and logout forms.
	public bool
	// session routes, the ones the dashboard reads, also take its
	// session cookie instead of the token (login.go says why only these).
	session bool
	// action routes are what the dashboard's buttons post to: a session
	// may call them with its CSRF token, and each call is logged with who
	// made it (actions.go).
	action bool
	// needs is the optional part of the daemon the route serves; nil for
	// the routes every daemon has.
	needs *part
}

// part is an optional capability of the daemon: a Config field that may
// be nil.
type part struct {
	name       string // as the 501 answer names it
	configured bool
}

// routeTable lists every API route.
func (s *Server) routeTable() []route {
	var (
		hosts    = &part{"host tracker", s.cfg.Health != nil}
		items    = &part{"retry scheduler", s.cfg.Retry != nil}
		bud      = &part{"admission budget", s.cfg.Budget != nil}
		feeds    = &part{"feed store", s.feedReader != nil}
		evidence = &part{"evidence book", s.cfg.Evidence != nil}
		metrics  = s.metrics.handler()
	)
	return []route{
		{pattern: "GET /healthz", h: s.healthz, public: true},
		{pattern: "GET /readyz", h: s.readyz, public: true},
		{pattern: "GET /metrics", h: func(w http.ResponseWriter, r *http.Request) error { metrics.ServeHTTP(w, r); return nil }},
		{pattern: "GET /{$}", h: s.dashboard, session: true},
		{pattern: "POST /login", h: s.login, public: true},
		{pattern: "POST /logout", h: s.logout, public: true},
		{pattern: "GET /v1/status", h: s.status, session: true},
		{pattern: "GET /v1/openapi.json", h: s.openAPI},

		{pattern: "POST /v1/guard/acquire", h: s.guardAcquire},
		{pattern: "POST /v1/guard/report", h: s.guardReport},
		{pattern: "POST /v1/guard/tickets/{id}/extend", h: s.guardExtend},
		{pattern: "POST /v1/guard/reset", h: s.guardReset, action: true},
		{pattern: "POST /v1/guard/reset-all", h: s.guardResetAll, action: true},
		{pattern: "GET /v1/guard", h: s.guardList},

		{pattern: "GET /v1/fetch", h: s.fetch},
		{pattern: "POST /v1/fetch", h: s.fetch},

		{pattern: "POST /v1/hosts/{name}/touch", h: s.hostTouch, needs: hosts},
		{pattern: "GET /v1/hosts", h: s.hostList, needs: hosts},
		{pattern: "GET /v1/hosts/{name}", h: s.hostGet, needs: hosts},
		{pattern: "POST /v1/hosts/{name}/reset", h: s.hostReset, needs: hosts, action: true},

		{pattern: "POST /v1/items", h: s.itemsAdd, needs: items},
		{pattern: "GET /v1/items", h: s.itemsList, needs: items, session: true},
		{pattern: "POST /v1/items/claim", h: s.itemsClaim, needs: items},
		{pattern: "POST /v1/items/observe", h: s.itemsObserve, needs: items},
		{pattern: "POST /v1/items/settle", h: s.itemsSettle, needs: items},
		{pattern: "GET /v1/items/stats", h: s.itemsStats, needs: items},
		{pattern: "GET /v1/items/{id}", h: s.itemGet, needs: items, session: true},
		{pattern: "POST /v1/items/{id}/succeed", h: s.itemSettle(retry.OpSucceed), needs: items},
		{pattern: "POST /v1/items/{id}/fail", h: s.itemSettle(retry.OpFail), needs: items},
		{pattern: "POST /v1/items/{id}/extend", h: s.itemExtend, needs: items},
		{pattern: "POST /v1/items/{id}/release", h: s.itemSettle(retry.OpRelease), needs: items},
		{pattern: "POST /v1/items/{id}/observe", h: s.itemObserve, needs: items},
		{pattern: "POST /v1/items/{id}/due-now", h: s.itemDueNow, needs: items, action: true},
		{pattern: "DELETE /v1/items/{id}", h: s.itemForget, needs: items, action: true},
		{pattern: "POST /v1/items/{id}/{op}", h: itemUnknownOp, needs: items},

		{pattern: "POST /v1/budget/admit", h: s.budgetAdmit, needs: bud},
		{pattern: "POST /v1/budget/grants/{id}/settle", h: s.budgetSettle, needs: bud},
		{pattern: "GET /v1/budget", h: s.budgetReport, needs: bud},
		{pattern: "PUT /v1/budget/sources/{name}", h: s.budgetSetSource, needs: bud},
		{pattern: "DELETE /v1/budget/sources/{name}", h: s.budgetRemoveSource, needs: bud},
		{pattern: "POST /v1/budget/sources/{name}/reset", h: s.budgetResetSource, needs: bud},
		{pattern: "POST /v1/budget/sources/{name}/pause", h: s.budgetPauseSource, needs: bud, action: true},
		{pattern: "POST /v1/budget/pause", h: s.budgetPause, needs: bud, action: true},

		{pattern: "GET /v1/leader", h: s.leaderGet},

		{pattern: "GET /v1/feeds", h: s.feedList, needs: feeds},
		{pattern: "POST /v1/feeds/{name}/reset", h: s.feedReset, needs: feeds},
		{pattern: "GET /v1/feeds/{name}/items", h: s.feedItems, needs: feeds},

		{pattern: "POST /v1/evidence", h: s.evidenceRecord, needs: evidence},
		{pattern: "POST /v1/evidence/policy", h: s.evidencePolicy, needs: evidence},
		{pattern: "GET /v1/evidence/{subject}", h: s.evidenceGet, needs: evidence},
	}
}

// routes registers every route of routeTable. Each is timed under its own
// pattern and, unless public, is behind the token. A route whose part is
// not configured answers 501, decided here once rather than in every
// handler.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routeTable() {
		h := strictInput(rt.pattern, rt.h)
		if rt.needs != nil && !rt.needs.configured {
			h = notConfigured(rt.needs.name)
		}
		hh := s.apiHandler(h)
		switch {
		case rt.action:
			hh = s.requireTokenOrSession(s.logAction(rt.pattern, hh), false, true)
		case rt.session:
			hh = s.requireTokenOrSession(hh, rt.pattern == "GET /{$}", false)
		case !rt.public:
			hh = s.requireToken(hh)
		}
		mux.Handle(rt.pattern, s.metrics.instrument(rt.pattern, hh))
	}
	// Anything else gets a JSON 404 or 405 rather than the mux's text
	// answer, so clients can always parse an error. It is timed under one
	// label, so unknown paths cannot grow the metric.
	fallback := s.metrics.instrument("unmatched", s.requireToken(s.apiHandler(func(w http.ResponseWriter, r *http.Request) error {
		h, _ := mux.Handler(r)
		probe := &probeWriter{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.code == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			return &apiError{Status: http.StatusMethodNotAllowed,
				Message: fmt.Sprintf("server: method %s is not allowed here; allowed: %s", r.Method, probe.header.Get("Allow"))}
		}
		return notFound("", "no such route")
	})))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			fallback.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// notConfigured answers every route of a part the daemon was started
// without.
func notConfigured(name string) handlerFunc {
	return func(http.ResponseWriter, *http.Request) error {
		return &apiError{Status: http.StatusNotImplemented, Message: "server: this daemon has no " + name + " configured"}
	}
}

// probeWriter learns what the mux would answer to an unmatched request
// (404, or 405 with an Allow header) without sending its text body.
type probeWriter struct {
	header http.Header
	code   int
}

func (p *probeWriter) Header() http.Header         { return p.header }
func (p *probeWriter) Write(b []byte) (int, error) { return len(b), nil }
func (p *probeWriter) WriteHeader(code int)        { p.code = code }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}
