// Package server is the hostguard daemon: it gives the connectivity guard,
// the per-host backoff and the retry scheduler to programs in any language
// over HTTP, and guards any HTTP client through a forward proxy.
//
// One Server holds one connectivity guard for the whole process. Its API
// (Handler) serves:
//
//   - GET /healthz, GET /metrics (Prometheus), and GET / (a status page);
//   - the guard: POST /v1/guard/acquire, /v1/guard/report, /v1/guard/reset,
//     and GET /v1/guard;
//   - the guarded fetch route, GET|POST /v1/fetch?url=...;
//   - hosts (health.Tracker) under /v1/hosts and items (retry.Scheduler)
//     under /v1/items;
//   - the admission budget under /v1/budget: admit and settle, today's
//     usage, and live changes to its sources and to a pause of all
//     background work, which the next admission sees;
//   - the feeds under /v1/feeds, evidence under /v1/evidence, and
//     GET /v1/leader;
//   - GET /v1/status, the status page's figures as JSON.
//
// While Serve runs, the node that leads (Config.Elector; a server without
// one always leads) runs the periodic work: it polls every configured
// Newznab or Torznab feed (Config.Feeds) at its budget's interval, and
// prunes old budget usage and surplus evidence. The items a feed finds are
// counted, and the newest are kept in memory for the API; the daemon does
// nothing else with them. An indexer's API key is never logged and is
// masked in everything the API returns.
//
// docs/api.md has a request and an answer for every route. Every error is
// JSON, {"error": "...", "field": "..."}, with a 4xx status for bad input;
// a request that is refused changes nothing.
//
// ProxyHandler is a forward proxy for its own listener: absolute-URI
// requests go through the guarded transport, and CONNECT tunnels count a
// failed dial against the target and its first byte as its answer.
//
// The fetch route and the proxy refuse upstream addresses on loopback,
// private, link-local and other non-public ranges unless
// Config.AllowPrivate is set. The check runs when the dialer has the
// resolved address, so a DNS name cannot smuggle such an address in; a
// refused request answers 403 and is inconclusive for the guard.
//
// A ticket acquired over the API is a lease (Config.TicketLease): a client
// that never reports it cannot hold a half-open endpoint's trial for longer.
//
// Serve runs both listeners and shuts down gracefully when its context
// ends. When Config.Token is set every route but /healthz needs
// "Authorization: Bearer TOKEN", and the proxy needs it as
// Proxy-Authorization; CheckListen refuses to serve beyond loopback without
// one.
package server
