// Package budget decides whether background work may contact a source now:
// daily allowances per source and per kind of work, a cap over all sources,
// byte reservations, and pacing between requests to one source — all kept
// in a shared store, so that several nodes together stay inside them.
//
// # Allowances
//
// A source's daily limit is the owner's figure, else the one the source
// reports (ReportLimit), else 1000. Its allowance is a share of that limit,
// rounded down: 5 % (ShareGentle), 10 % (ShareNormal, the default) or
// 100 % minus a reserve for the owner (ShareUnlimited). Head polls, gap pages
// and title searches are paid from it. An owner's total (Limits.Total) caps
// all sources together; by default the total is the sum of the allowances.
// Validation requests (100), candidate checks (20), descriptor grabs (20)
// and bytes (512 MiB) have cluster-wide allowances of their own. Any
// allowance set to zero disables that work. Foreground work is recorded but
// never refused and never paid from background allowances.
//
// Days are UTC days. Counters are keyed by day, so nothing needs to run at
// midnight: the first admission of a new day simply finds fresh counters.
//
// # Head polls first
//
// A feed must keep being polled however busy its source is with gap pages
// and searches. The head-poll interval is 30 minutes, stretched so that head
// polls take at most half of the allowance (PollInterval), and the head
// polls the rest of the day still needs at that interval are kept back from
// gap pages and searches.
//
// # Pacing
//
// Two requests to one source are at least its Pace (3 s) apart on every
// node together: each admission takes the source's next slot,
// next = max(next, now) + pace, in the same atomic store step that checks and
// charges the allowances. Admit refuses when the slot is not free now; Wait
// reserves the next free slot and sleeps until it, so waiters are served in
// order. Neither ever waits for an exhausted allowance.
//
// # Reservations
//
// Byte grants are reservations with a durable id: reserve the most a
// transfer can take, then Settle with the actual figure (or Release) from
// any node. A reservation left open stays charged in full to its day.
//
// # Throughput
//
// Every admission is decided in the store, and a counter that every
// admission changes (a busy source's) can change only as often as the store
// commits. Admissions that arrive on one node while its previous store call
// is in flight therefore go together in the next call: one transaction,
// each admission still decided on its own and in arrival order. The store
// engines share one decision procedure, so both decide alike.
//
// # Configuration
//
// Config is the base configuration of a node. Changes while running
// (SetSource, RemoveSource, SetLimits, Pause, ReportLimit) are overrides
// kept in the store's settings record (SettingsStore), shared by every node
// and kept across restarts; an override wins over the base until removed.
// Every admission transaction checks the record's generation, so the next
// admission on every node sees a change. Nodes that share a store should
// have the same base. Clocks of nodes should agree to well within a pace.
package budget
