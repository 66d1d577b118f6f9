// Package retry is a durable, long-horizon retry scheduler: work that failed
// is kept and tried again later, on a schedule that depends on why it
// failed, pulled forward when new evidence appears, and handed to workers
// under leases. It is meant for millions of items — infohashes waiting for
// metadata, feeds waiting for a host to come back — most of which wait for
// days.
//
// # Items and states
//
// An item is an id, a priority and an optional payload. It is pending until
// first handed out, leased while a worker holds it, scheduled while it waits
// for its next attempt, and done once it succeeded. Failure never deletes an
// item; only Forget does.
//
// # Schedules
//
// Every failure has a class ("no_peers", "timeout", ...). Each class has a
// ladder of delays (Config.Classes, else Config.Default: 30 min, 2 h, 8 h,
// 1 d, 7 d, then 30 d for every later failure); the n-th failure in a row
// waits the ladder's n-th step. Each delay is spread by jitter (±10 % by
// default) so that items failing together do not come due together. The
// last few failures are kept with their class and a short note.
//
// A failure or a sighting may name its source (a DHT node, a tracker, a
// peer, an indexer): the item keeps the latest word from each of a few
// sources (Item.Sources), and a class may escalate by how many distinct
// sources reported it instead of by failures in a row
// (ClassConfig.Escalate = BySources): a hash mismatch seen by one tracker
// may wait a day, by three sources a month.
//
// Observe is the other direction: a fresh sighting of an item moves its next
// attempt to within Config.ReactivateWithin and raises its priority, so
// that new evidence beats old pessimism. A source that keeps reporting the
// same item raises its priority once, not on every sighting.
//
// # Hosts
//
// An item may name the host it depends on (NewItem.Host, Outcome.Host).
// When that host answers again, WakeHost makes its items that wait out a
// host-level failure (IsHostClass: timeout, refused, a DNS failure, ...)
// due within Config.WakeJitter, keeping their place on the ladder: a
// recovery seen anywhere beats the pessimism of an old failure. The
// daemon calls it on a successful touch of the host tracker and when a
// guard endpoint closes on an answer.
//
// # Leases
//
// Claim hands out due items, highest priority first, each under a lease
// with a secret token (128 random bits) and a fencing term (Lease.Term,
// which grows with every lease). The worker answers with Succeed, Fail, Release or
// Extend (or Settle, for a batch). A stale token gets ErrLeaseLost and
// changes nothing; repeating an answer is harmless. A lease that runs out
// makes its item due again without counting a failure, but an item whose
// leases keep running out (a poison item that kills its workers) gets a
// failure of class ClassLeaseExpired every third time. While new items are
// due, retries take at most Config.RetryShare of each claim, so old
// failures cannot starve new work.
//
// # Waiting for work
//
// A worker need not sleep and poll: ClaimParams.Wait makes Claim wait, up
// to MaxClaimWait and while its context lasts, until something is due. It
// is woken when an item is added, observed, failed or released — on every
// node through PostgreSQL's LISTEN/NOTIFY, in process on SQLite — or when
// the next item comes due by time, and looks again every Config.ClaimPoll
// in case a wake-up could not reach it (another process on the same SQLite
// file).
//
// # Storage
//
// A Scheduler keeps nothing in memory: everything is in its Store
// (hostguard.Open gives one: SQLite for one node, PostgreSQL for several),
// so a restart, or a kill -9, loses no item and no schedule. (One
// exception, and only for a crash of the database server itself: on
// PostgreSQL a sighting of a known item does not wait for the disk, so
// the last fraction of a second of them can be lost; see
// Config.SyncSightings.) Claims are
// served from an index over due items only, so their cost does not grow
// with the number of items waiting for the future.
package retry
