// Package transport is an http.RoundTripper that puts hostguard's
// connectivity guard in front of every outbound request and bounds how long a
// host may stay silent.
//
// Each round trip is one hop: an http.Client follows redirects by calling
// RoundTrip once per hop, so every hop takes its own guard ticket for its own
// origin. A redirect proves the redirecting host answered, and a failure on a
// later hop is charged to the later hop's host alone.
//
// Two limits bound silence, never total time. HeaderTimeout limits
// connecting and then the wait for response headers, which starts afresh
// once the host has the whole request: sending a request body is the
// caller's time and never charged to the host. When it expires the host
// counts as not answering. IdleTimeout limits how long a body read may wait
// for the next byte; a body that keeps arriving is never cut however long
// it takes, and a stalled body is cut with a timeout error but not held
// against the host, which did answer. The daemon's fetch route and proxy
// follow these same rules, in the same code.
//
// A caller that stops waiting is judged by the guard's wait rule (see
// guard.WaitError): its deadline, whether it arrives as the context's
// deadline or, from http.Client.Timeout, as a cancellation racing that
// deadline, counts against the host only once the host has owed its
// answer longer than guard.Config.WaitFloor (1 s) and longer than
// guard.WaitFactor times what it recently needed to answer, which every
// answer reports. So http.Client{Timeout: 2 * time.Second} trips a silent
// host on its second timeout, and never a host seen answering in 5 s. A
// request its caller cancels before any deadline says nothing about the
// host: it never counts, and its ticket (possibly the endpoint's one
// half-open trial) is released only once the base transport has returned. Requests whose context comes
// from Exempt are never refused and never count failures, for probes that
// expect most attempts to fail.
//
// With Config.Probe (or a guard.Config.Probe built by ProbeFunc) the guard
// checks an endpoint that was asked for while open itself, with one bare
// HEAD request, when its open period ends; callers keep failing fast
// meanwhile instead of one of them waiting on the host as the trial.
//
// When the guard holds an endpoint open, RoundTrip fails fast with an error
// wrapping *guard.OpenError and does no network work at all. Recognise it
// with errors.Is(err, guard.ErrOpen), and read OpenError.RetryAfter with
// errors.As.
//
// With Config.Budget set, a request whose context comes from WithAdmission
// is admitted before the guard is asked: it waits for its source's pacing
// slot, and is refused with the budget's error, without network work, when
// the day's allowance is exhausted. A bytes reservation is settled to the
// body bytes read when the body is closed, and released when the request
// fails.
package transport
