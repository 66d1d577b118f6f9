// Package fleet simulates a fleet of unreliable hosts on 127.0.0.1 and a
// client workload of catalogue fan-outs across them, so that ways of
// deciding whether to contact a host (no breaker, peer circuit breakers,
// hostguard's transport, and an oracle that knows the truth) can be run
// through the same plan and compared.
//
// A Plan is drawn from a seed: hosts of each Kind with their latencies and
// outage schedules, and for each worker a list of sessions, each a few
// fan-outs (bursts of parallel requests) to one host. Run starts the fleet,
// plays the workload through one Policy and records every request;
// Summarize turns that into the figures the report shows.
//
// Time is scaled: every duration is a multiple of Config.Timeout, the
// client's wait for headers, which stands for a real-world 30 s.
package fleet
