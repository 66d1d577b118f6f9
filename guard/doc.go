// Package guard is an in-memory circuit breaker per endpoint: it stops a
// program from waiting, request after request, on a host that does not
// answer, while erring towards contacting the host whenever the evidence is
// thin, because refusing a host that works is the worse mistake.
//
// An endpoint is a URL origin (see Key): scheme, host and port. Each
// request asks the Guard for a Ticket and settles it:
//
//	t, err := g.Acquire(u)
//	if err != nil {
//		return err // *OpenError: skipped without network work; or a bad URL
//	}
//	defer t.Release()
//	resp, err := client.Do(req)
//	if err != nil {
//		t.Failed(err)
//		return err
//	}
//	t.Answered() // any status: 200, 404 and 502 all prove the host answered
//
// # Rules
//
// Failures are classified with failure.Classify; only host-level ones
// (timeouts, DNS, refused, unreachable, aborted) count, and only when they
// are news:
//
//   - Threshold counted failures whose times lie within one Window (both
//     ends included) open the endpoint; a failure more than Window after
//     the earlier ones starts a new streak at 1.
//   - Open: for OpenFor every Acquire returns an *OpenError with the time
//     left in RetryAfter.
//   - Half-open: then exactly one trial ticket is admitted and everyone
//     else gets an *OpenError with RetryAfter 0 until it settles. The slot
//     has no deadline of its own: it belongs to its ticket until that
//     ticket is answered, failed or released. A failed trial opens the
//     endpoint again at once; an answered one closes it. With TrialWait
//     (off by default; the daemon's is 2 s) a caller that finds the trial
//     out waits for its outcome, at most what the host needs to answer,
//     instead of being refused at once.
//   - Any answer clears the record, whatever its state.
//   - Siblings are one piece of evidence: requests already in flight when a
//     failure is counted (admitted before it) cannot add to the streak, in
//     any completion order and even within one clock instant. Only a
//     counted failure can open or re-open an endpoint, so a sibling that
//     fails late never starts a new open period.
//   - Reset(url) bumps the endpoint's epoch and closes it; failures from
//     tickets issued before the reset are discarded. ResetAll does the
//     same for every endpoint at once.
//   - Inconclusive failures (cancellation, policy refusal, reset by peer,
//     TLS, unknown) record nothing; they only free the trial slot if the
//     ticket holds it. Release does the same for a ticket that reports
//     nothing, and can never free a slot a newer trial holds.
//   - Callers who stop waiting (a *WaitError: their own timeout or
//     deadline, or going away) are judged by how long the endpoint had
//     owed its answer: it counts as a timeout only when longer than
//     Config.WaitFloor (1s) and longer than WaitFactor (4) times what the
//     endpoint recently needed to answer, as reported by AnsweredAfter;
//     shorter waits are inconclusive, however short a wait was asked for.
//     A host that answers slowly is not charged for impatient callers.
//   - Exempt tickets (AcquireExempt) are never refused and their failures
//     never count, but their answers clear.
//   - Growth (Config.MaxOpenFor, off unless set): the n-th opening in a
//     row without an answer lasts min(n × OpenFor, MaxOpenFor), spread by
//     up to +10 % from the second on; an answer or Reset starts again at
//     OpenFor.
//   - Probes (Config.Probe, off unless set): when an open period ends and
//     the endpoint was asked for during it (at least one Acquire refused,
//     then or while the failed trial before it ran),
//     the guard calls Probe itself, from a timer, as the endpoint's one
//     trial, so that no caller waits on a host that may still be down.
//     Every Acquire keeps failing fast, with RetryAfter 0, until the probe
//     returns: nil closes the endpoint, a host-level error opens it again,
//     anything else frees the slot and the next Acquire is an ordinary
//     trial. An endpoint nobody asked for is not probed; its next Acquire
//     is the trial. A probe is a trial like any other: it holds the slot
//     until it returns, a probe started before a Reset reports into
//     nothing, and a record with a probe running is never evicted. At most
//     MaxProbes run at once; Close stops them.
//   - Sharing (Config.Share, off unless set): the guard passes its own
//     transitions to a Sharer — an opening with its until, an answer that
//     closes an open endpoint, Reset and ResetAll — and takes other
//     guards' in through Apply; nothing is shared per request. An opening
//     is published only while some other endpoint answered within the last
//     30 s, so a node whose own network is down keeps its verdicts to
//     itself. A remote opening is adopted only if this guard has not seen
//     the host answer since the request behind its first failure was sent
//     (a timeout is dated from its request: see Ticket.Failed), and it
//     ends at its own until. A sharing guard keeps answer times, and
//     drops its own failures whose request went out before the host's
//     latest answer (every guard drops a timeout whose request was
//     admitted before an answered one: see Ticket.Failed). With a Sharer that is also a Claimer, the end of an open
//     period waits for the cluster's lease: the holder runs the trial or
//     probe, and the others fail fast with RetryAfter 0 until its result
//     arrives or the lease expires.
//   - The kill switch (Config.Disabled, by default HOSTGUARD_DISABLE_GUARD)
//     is read on every call: while it is on,
//     Acquire refuses nothing and creates no record, failures are not
//     recorded, and tickets still release what they hold.
//
// # Memory
//
// The guard keeps at most MaxEndpoints records. Closed records without
// tickets out are pruned once idle for IdleTTL (see Prune) and are the
// first to be evicted when the cap is reached; open and half-open records
// go only after them. A record with tickets out is kept while they are in
// use: it is reclaimed only once none has been admitted for StaleAfter
// and none is a trial (a running probe is one), so that a caller holding
// unreported tickets on MaxEndpoints endpoints cannot leave another
// caller's dead host untracked. The reclaimed record's tickets then report
// into nothing: they point to their own record, never to its successor.
// Eviction walks the records with a clock hand, so a stream of new
// endpoints above the cap costs a few steps per record on average, not a
// scan of every record, and records are found in a table of the guard's
// own whose reads take no lock. When every record has recent tickets out,
// a new endpoint is let through untracked rather than evicting evidence in
// use or refusing anything.
//
// At the cap, a new endpoint must earn its record. Its first sighting is
// let through on no record, leaving only a fingerprint at a door; it gets
// a record when it is seen again soon (before about MaxEndpoints/8 other
// new endpoints were turned away), when its ticket reports a failure that
// could count, or when it answers slowly enough to matter to the wait rule
// (Ticket.AnsweredAfter). A failure reported that way counts as a
// sibling of any failure already counted on the record, and a Reset or
// ResetAll after the ticket was admitted voids it, as for any ticket. So a
// stream of endpoints each used once costs a lookup, not an eviction, and
// never pushes out records in use, while a dead host still trips after
// its two fan-outs. The price: an endpoint let in at the door that only
// answers fast leaves no trace, so Endpoints does not list it.
//
// # Cost
//
// Acquire, Answered and Release on a closed endpoint take no lock, read no
// clock and allocate only the 32-byte ticket; keying a URL that is already
// canonical allocates nothing and takes one pass over its origin. A
// fast-fail reads the clock and, once the first refusal of an open period
// is noted, takes no lock and allocates nothing either: callers refused
// within one millisecond share one *OpenError. Callers on different
// endpoints share no lock and no counter. The default kill switch reads
// the environment on every Acquire, which takes the process's environment
// read lock; set Config.Disabled to read a flag instead where that
// matters.
package guard
