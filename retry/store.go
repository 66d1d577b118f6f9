package retry

import (
	"context"
	"time"
)

// Store is the durable part of a Scheduler. store/sqlite and store/postgres
// implement it and pass store/storetest; callers get one from
// hostguard.Open and never call these methods themselves.
//
// The Scheduler owns every rule (ladders, jitter, token checks, what an
// item looks like from outside, how counts add up); a Store loads, locks
// and saves. Every method is one transaction, and on a shared database two
// nodes calling at once never hand one item to two workers or lose an
// update. Times passed in are already truncated to microseconds. A Store
// wraps its driver's errors once, naming itself and the operation; the
// Scheduler passes them on unchanged.
type Store interface {
	// RetryAdd inserts p.Items (validated, distinct, sorted by id). For an
	// id that exists it only raises the priority to the new one if higher.
	RetryAdd(ctx context.Context, p StoreAddParams) (StoreAddResult, error)
	// RetryClaim makes due items ready (see StoreClaimParams) and leases up
	// to p.N of them.
	RetryClaim(ctx context.Context, p StoreClaimParams) (StoreClaimResult, error)
	// RetryUpdate locks the records of p.IDs, lets p.Apply change them, and
	// writes back the changed ones, all in one transaction.
	RetryUpdate(ctx context.Context, p StoreUpdateParams) (StoreUpdateResult, error)
	// RetrySucceed is the fast path for the commonest lease operation, in
	// one statement: see StoreSucceedParams. The Scheduler judges the
	// entries it did not mark done (repeats, stale tokens, missing items)
	// through RetryUpdate.
	RetrySucceed(ctx context.Context, p StoreSucceedParams) (StoreSucceedResult, error)
	// RetryObserve records a sighting of each of p.IDs (see
	// StoreObserveParams).
	RetryObserve(ctx context.Context, p StoreObserveParams) (StoreObserveResult, error)
	// RetryGet loads one item, or returns ErrNotFound.
	RetryGet(ctx context.Context, p StoreGetParams) (StoreGetResult, error)
	// RetryStats reads the item counters and the due backlog, and with
	// DueBounds the due histogram, from one snapshot.
	RetryStats(ctx context.Context, p StoreStatsParams) (StoreStatsResult, error)
	// RetryForget deletes one item, or returns ErrNotFound.
	RetryForget(ctx context.Context, p StoreForgetParams) error
	// RetryWake returns a channel that is closed at the next change that
	// may make work claimable, wherever the store can hear of it: an item
	// added or observed, or written back pending or scheduled (a failure,
	// a release, a lease that ran out). It may also close without cause. A
	// store that hears of nothing returns a channel that never closes;
	// waiting claims then rely on Config.ClaimPoll.
	RetryWake(ctx context.Context) (<-chan struct{}, error)
	// RetryNextDue says when the earliest item that is not ready yet
	// (future work, a lease) comes due.
	RetryNextDue(ctx context.Context, p StoreNextDueParams) (StoreNextDueResult, error)
	// RetryPrune deletes up to p.Limit done items last changed before
	// p.Before, oldest first, and adds how many to the store's retention
	// counter (with p.Now as its time) in the transaction that deletes
	// them. An engine may split the work into several shorter
	// transactions; on an error, Deleted still says how many went. It
	// never deletes an item in any other state.
	RetryPrune(ctx context.Context, p StorePruneParams) (StorePruneResult, error)
	// RetryList walks items in id order and returns those matching its
	// filters (see StoreListParams), from one snapshot.
	RetryList(ctx context.Context, p StoreListParams) (StoreListResult, error)
	// RetryDue counts pending and scheduled items by next_at (see
	// StoreDueParams), from one snapshot.
	RetryDue(ctx context.Context, p StoreDueParams) (StoreDueResult, error)
	// RetryWakeHost makes the parked items of p.Host due soon: every item
	// with Host p.Host, State Scheduled, not ready, LastClass among
	// p.Classes and NextAt after p.Now+p.Spread gets a NextAt within
	// [p.Now, p.Now+p.Spread], whole microseconds, drawn per item (uniform
	// over the spread, or over an even share of it for each group of
	// items the store moves together), and UpdatedAt p.Now; nothing else
	// of it changes. It adds one event and the items it moved to the
	// store's wake counters (with p.Now as their time) when it moved any,
	// in the transaction that moves the items, or, when the store moves
	// them in several, the event with the first. After each commit it
	// wakes waiting claims as RetryWake says, if it moved any. A store
	// that moves the items in several transactions and fails part way
	// returns the items moved so far with its error; calling it again
	// moves the rest.
	RetryWakeHost(ctx context.Context, p StoreWakeHostParams) (StoreWakeHostResult, error)
}

// StoreWriters is a Store that says how many write transactions it runs
// at once. Concurrent Observe calls keep up to that many shared writes in
// flight (at most four); a Store without the method gets one at a time,
// which suits an engine with a single writer: writes that queue for it
// would only split the batches that share it.
type StoreWriters interface {
	RetryWriters() int
}

// StoreSucceedClaimer is a Store that can settle successes and claim in
// one transaction. Scheduler.SucceedAndClaim uses it when the Store has it,
// and otherwise settles first and claims after, in two.
type StoreSucceedClaimer interface {
	// RetrySucceedClaim applies p.Succeed exactly as RetrySucceed would,
	// then p.Claim exactly as RetryClaim would, in one transaction: if
	// either step fails, neither takes effect. The claim sees the
	// successes, so an item marked done is never among its grants.
	RetrySucceedClaim(ctx context.Context, p StoreSucceedClaimParams) (StoreSucceedClaimResult, error)
}

// StoreSucceedClaimParams is the input of StoreSucceedClaimer.RetrySucceedClaim.
// Succeed.Now and Claim.Now are the same time.
type StoreSucceedClaimParams struct {
	Succeed StoreSucceedParams
	Claim   StoreClaimParams
}

// StoreSucceedClaimResult is the output of StoreSucceedClaimer.RetrySucceedClaim.
type StoreSucceedClaimResult struct {
	Succeed StoreSucceedResult
	Claim   StoreClaimResult
}

// StorePruneParams is the input of Store.RetryPrune.
type StorePruneParams struct {
	Now    time.Time
	Before time.Time
	Limit  int
}

// StorePruneResult is the output of Store.RetryPrune.
type StorePruneResult struct {
	Deleted int
}

// StoreNextDueParams is the input of Store.RetryNextDue.
type StoreNextDueParams struct{}

// StoreNextDueResult is the output of Store.RetryNextDue.
type StoreNextDueResult struct {
	// At is the earliest next_at of an item that is not ready; zero if
	// there is none.
	At time.Time
}

// StoreAddParams is the input of Store.RetryAdd.
type StoreAddParams struct {
	Now time.Time
	// Items have NotBefore set (never zero), Host normalised and no
	// duplicate ids. A new item is pending, due at NotBefore (ready if
	// that is not after Now), with Host (NULL when empty). An existing
	// item keeps its host.
	Items []NewItem
}

// StoreAddResult is the output of Store.RetryAdd.
type StoreAddResult struct {
	// Added counts the items inserted; the others existed.
	Added int
}

// StoreClaimParams is the input of Store.RetryClaim.
//
// A store keeps a "ready" mark on pending and scheduled items whose time has
// come, and serves claims from an index over ready items only, so that a
// claim never walks the (usually far larger) set of items waiting for a
// future time. RetryClaim first promotes up to PromoteLimit items whose
// next_at <= Now, oldest first:
//   - a pending or scheduled item becomes ready;
//   - a leased item (its lease ran out) gets Expiries+1, becomes scheduled
//     and ready, keeping its lease generation (so the late holder may still
//     settle it until someone claims it again) — unless Expiries+1 reaches
//     MaxExpiries: then it is left alone and its id is returned in
//     StoreClaimResult.Expired for the Scheduler to record as a failure.
//
// Then it picks ready items with next_at <= Now, highest priority first and
// oldest next_at next, taking at most RetryQuota scheduled items while
// pending ones are available and filling the rest of N with whichever kind
// remains (internal/retrystore.Pick). Each picked item becomes leased:
// Attempts+1, a new lease generation from the database-wide counter,
// next_at = Now+Lease, Worker, and the k-th picked item (in any order the
// store likes) LeaseKey Keys[k].
type StoreClaimParams struct {
	Now        time.Time
	N          int
	RetryQuota int
	Lease      time.Duration
	Worker     string
	// Keys are N fresh lease tokens.
	Keys         []string
	PromoteLimit int
	MaxExpiries  int
}

// StoreClaimResult is the output of Store.RetryClaim.
type StoreClaimResult struct {
	// Grants are the leased items, in any order.
	Grants []StoreGrant
	// Expired are leased items whose lease ran out for the MaxExpiries-th
	// time in a row; they are still leased, with next_at in the past.
	Expired []string
}

// StoreGrant is one item leased by Store.RetryClaim, as it is after the
// claim.
type StoreGrant struct {
	ID  string
	Gen int64
	// Key is the lease token the store gave the item.
	Key       string
	Attempt   int
	Failures  int
	Priority  int
	LastClass string
	Payload   []byte
	Until     time.Time
	// DueAt is the item's next_at before the claim.
	DueAt time.Time
	// Was is the state before the claim: Pending or Scheduled.
	Was State
}

// StoreUpdateParams is the input of Store.RetryUpdate.
type StoreUpdateParams struct {
	Now time.Time
	// IDs may repeat; Apply then sees the same record again, with the
	// earlier changes in it.
	IDs []string
	// AddMissing, when set, makes the store insert every id of IDs it does
	// not hold, before Apply, as a pending item due at Now (ready) with
	// AddMissing's Priority and Payload, or find it if another writer
	// inserted it meanwhile; Apply then sees it with Inserted set.
	AddMissing *NewItem
	// WakeBefore, when not zero, limits the wake-up that follows the
	// commit (see Store.RetryWake) to writes that leave an item pending or
	// scheduled and due before it; zero wakes for any such item. Nothing
	// due before every waiting claim has ended needs one.
	WakeBefore time.Time
	// Lazy lets the store acknowledge the update once it is committed,
	// before it is on disk, when it inserted no item (sightings with a
	// source, Config.SyncSightings false).
	Lazy bool
	// Apply is called once per entry of IDs whose item exists, in order,
	// inside the store's transaction, with the item's record locked. It
	// changes r in place and reports whether it did; a non-nil error is
	// reported for entry i and must come with no change. A store may run
	// its transaction again after the database aborted it (PostgreSQL,
	// for a deadlock), calling Apply again on records read afresh, so
	// Apply must decide from r alone and overwrite, not accumulate, what
	// it records outside it.
	Apply func(i int, r *StoreRecord) (changed bool, err error)
}

// StoreUpdateResult is the output of Store.RetryUpdate.
type StoreUpdateResult struct {
	// Errs has one entry per entry of IDs: nil, ErrNotFound, or the error
	// Apply returned.
	Errs []error
}

// StoreSucceedParams is the input of Store.RetrySucceed. IDs are distinct
// and sorted; Keys[i] is the lease token presented for IDs[i]. An item is
// marked done exactly when its LeaseKey equals Keys[i] and its SettledGen
// differs from its LeaseGen (its lease is live, or ran out without being
// claimed again): State Done, NextAt zero (NULL), not ready, Failures 0,
// Expiries 0, no Worker, SettledGen LeaseGen, SettledOp OpSucceed,
// UpdatedAt Now. This is the transition Scheduler.Settle would make
// through RetryUpdate.
type StoreSucceedParams struct {
	Now  time.Time
	IDs  []string
	Keys []string
}

// StoreSucceedResult is the output of Store.RetrySucceed.
type StoreSucceedResult struct {
	// Done says, per entry of IDs, whether the store marked it done.
	Done []bool
}

// StoreRecord is an item as stored. RetryUpdate loads every field and,
// when Apply reports a change, writes back every field except ID and
// CreatedAt, setting the ready mark from Ready(now). History and Sources
// are opaque to a store: it keeps the bytes as they are.
type StoreRecord struct {
	ID        string
	Priority  int
	State     State
	NextAt    time.Time // next due (pending, scheduled), lease end (leased), zero (done)
	Attempts  int
	Failures  int
	Expiries  int
	LastClass string
	History   []byte
	Sources   []byte
	Worker    string
	// Host is the item's host (NormalizeHost), empty for none.
	Host string
	// LeaseGen is the generation of the latest lease granted on the item,
	// and LeaseKey its token.
	LeaseGen int64
	LeaseKey string
	// SettledGen and SettledOp record the latest lease that was settled and
	// how, so that a repeated call can be told from a stale one.
	SettledGen   int64
	SettledOp    Op
	Observations int
	LastSeen     time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// Inserted is set on records the store inserted for
	// StoreUpdateParams.AddMissing in this transaction; it is not stored.
	Inserted bool
}

// Ready reports whether the record belongs in the claim index at now.
func (r *StoreRecord) Ready(now time.Time) bool {
	return (r.State == Pending || r.State == Scheduled) && !r.NextAt.After(now)
}

// StoreObserveParams is the input of Store.RetryObserve; IDs are distinct
// and sorted. For each id that exists, for a pending or scheduled item the
// store sets priority = max(priority, min(priority+Boost, MaxPriority)) and
// next_at = min(next_at, PullTo); for every item it adds one to
// Observations and sets LastSeen = Now. A missing item is inserted
// (pending, due Now, with Priority and Payload, one observation) when
// AddIfMissing is set.
type StoreObserveParams struct {
	Now          time.Time
	IDs          []string
	Boost        int
	MaxPriority  int
	PullTo       time.Time
	AddIfMissing bool
	Priority     int
	Payload      []byte
	// WakeBefore is as in StoreUpdateParams: after the commit, waiting
	// claims are woken only if an item was added, or a sighting left an
	// item pending or scheduled and due before it (zero: any).
	WakeBefore time.Time
	// Lazy lets the store acknowledge the sightings of existing ids once
	// they are committed, before they are on disk (Config.SyncSightings
	// is false). Items added for AddIfMissing are written durably
	// whatever it says.
	Lazy bool
}

// StoreObserveResult is the output of Store.RetryObserve.
type StoreObserveResult struct {
	// Results has one entry per id, in order: the item's state, priority
	// and next_at after the sighting, Added if it was inserted, Unknown if
	// it is missing and was not.
	Results []ObserveResult
}

// StoreGetParams is the input of Store.RetryGet.
type StoreGetParams struct {
	ID string
}

// StoreGetResult is the output of Store.RetryGet.
type StoreGetResult struct {
	Record  StoreRecord
	Payload []byte
}

// StoreStatsParams is the input of Store.RetryStats.
type StoreStatsParams struct {
	// Now decides what is due.
	Now time.Time
	// DueBounds, when set, asks for the due histogram too (Due), read as
	// RetryDue reads it with these bounds and from the same snapshot as
	// the counters, so that a report showing both never disagrees with
	// itself.
	DueBounds []time.Time
}

// StoreStatsResult is the output of Store.RetryStats, read from one
// snapshot.
type StoreStatsResult struct {
	// Counts are the store's item counters by state and last class, in any
	// order; the same pair may appear more than once (shards), and zero
	// counts may be left out.
	Counts []StoreCount
	// DueNow counts the pending and scheduled items whose next_at has
	// come (ready or not), as RetryDue's first bucket does.
	DueNow int
	// OldestDue is the earliest next_at among them; zero if none.
	OldestDue time.Time
	// LeasesExpired counts the leased items whose lease (next_at) has run
	// out: claimable again, but not counted as due.
	LeasesExpired int
	// Due is RetryDue's answer for DueBounds; nil when they were not set.
	Due *StoreDueResult
	// Pruned is the retention counter: done items RetryPrune deleted, in
	// total, and when it last deleted any (zero if never).
	Pruned   int64
	PrunedAt time.Time
	// HostWakes and HostWoken are the wake counters (RetryWakeHost):
	// wakes that moved items, and the items they moved, in total, and
	// when the latest was (zero if never).
	HostWakes   int64
	HostWoken   int64
	HostWokenAt time.Time
}

// StoreCount is one item counter.
type StoreCount struct {
	State State
	Class string
	N     int
}

// StoreForgetParams is the input of Store.RetryForget.
type StoreForgetParams struct {
	ID string
}

// ObserveResult says what Observe did with one id.
type ObserveResult struct {
	ID string `json:"id"`
	// Unknown is true when the id is not held and was not added
	// (ObserveMany only; Observe returns ErrNotFound).
	Unknown bool `json:"unknown,omitempty"`
	// Added is true when the id was unknown and has been added.
	Added    bool      `json:"added"`
	State    State     `json:"state"`
	Priority int       `json:"priority"`
	NextAt   time.Time `json:"next_at,omitzero"`
}
