// Package health keeps a durable, progressive backoff per host name and says
// which names are worth contacting.
//
// Every attempt to reach a host ends with Tracker.Touch(name, ok). A failure
// grows the name's streak of consecutive failures and backs it off for the
// matching step of a ladder (by default 5s, 10s, 20s, 30s, 60s, 300s, then
// 3600s for the seventh failure in a row and every later one); a success
// ends the streak and the backoff at once. The records live in a Store
// (hostguard.Open gives one: SQLite by default, PostgreSQL for several
// nodes), so they survive restarts and are shared between nodes.
//
// # Two views
//
// Healthy is strict and meant for what a person sees: a name is healthy only
// with no failure since its last success. Available is time-based and meant
// for background work: a name is available again once its backoff is over,
// so a background retry can find the host working and, by succeeding, make
// it healthy again. Unknown names are healthy and available. Filter keeps
// the names of a list that pass a view, with one store query for the whole
// list; List, Status and Counts are for inspection.
//
// # Outage protection
//
// When this machine loses its network every host fails at once, and
// counting those failures would back off every host although none is broken.
// So a Tracker remembers, in memory, when it last saw a success of any name;
// a failure counts only if that success lies within Config.OutageAfter (30s).
// Otherwise the failure is recorded (LastFailure, Failures,
// IgnoredFailures) without growing the streak. A new Tracker has seen no
// success yet, so the first failures after a process starts are not counted
// until some name succeeds. The memory is per process: only this machine
// knows whether its own network works.
//
// # Names
//
// Names are trimmed and compared case-insensitively (NormalizeName). A
// record keeps the spelling it was first seen with as Display. Typical names
// are host names ("files.example.net") or origins ("https://api.example.com");
// URLs with userinfo, a query or a fragment are refused so that no
// credential reaches the database or a log line.
//
// # Logging
//
// A counted failure logs one line (name, streak, backoff) once the streak is
// LogFromFails (4) long; shorter streaks never log. An outage logs one line
// when failures start being ignored. Filter never logs; it returns how many
// names it removed.
package health
