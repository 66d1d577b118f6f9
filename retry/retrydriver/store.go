package retrydriver

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound reports an id the store does not hold. retry.ErrNotFound is
// this same value, so errors.Is matches it on either side of the seam.
var ErrNotFound = errors.New("retry: no such item")

// Store is the durable part of a retry.Scheduler. store/sqlite and
// store/postgres implement it and pass store/storetest; callers get one
// from hostguard.Open and never call these methods themselves.
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
	RetryAdd(ctx context.Context, p AddParams) (AddResult, error)
	// RetryClaim makes due items ready (see ClaimParams) and leases up
	// to p.N of them.
	RetryClaim(ctx context.Context, p ClaimParams) (ClaimResult, error)
	// RetryUpdate locks the records of p.IDs, lets p.Apply change them, and
	// writes back the changed ones, all in one transaction.
	RetryUpdate(ctx context.Context, p UpdateParams) (UpdateResult, error)
	// RetrySucceed is the fast path for the commonest lease operation, in
	// one statement: see SucceedParams. The Scheduler judges the
	// entries it did not mark done (repeats, stale tokens, missing items)
	// through RetryUpdate.
	RetrySucceed(ctx context.Context, p SucceedParams) (SucceedResult, error)
	// RetryObserve records a sighting of each of p.IDs (see
	// ObserveParams).
	RetryObserve(ctx context.Context, p ObserveParams) (ObserveResult, error)
	// RetryGet loads one item, or returns ErrNotFound.
	RetryGet(ctx context.Context, p GetParams) (GetResult, error)
	// RetryStats reads the item counters and the due backlog, and with
	// DueBounds the due histogram, from one snapshot.
	RetryStats(ctx context.Context, p StatsParams) (StatsResult, error)
	// RetryForget deletes one item, or returns ErrNotFound.
	RetryForget(ctx context.Context, p ForgetParams) error
	// RetryWake returns a channel that is closed at the next change that
	// may make work claimable, wherever the store can hear of it: an item
	// added or observed, or written back pending or scheduled (a failure,
	// a release, a lease that ran out). It may also close without cause. A
	// store that hears of nothing returns a channel that never closes;
	// waiting claims then rely on retry.Config.ClaimPoll.
	RetryWake(ctx context.Context) (<-chan struct{}, error)
	// RetryNextDue says when the earliest item that is not ready yet
	// (future work, a lease) comes due.
	RetryNextDue(ctx context.Context, p NextDueParams) (NextDueResult, error)
	// RetryPrune deletes up to p.Limit done items last changed before
	// p.Before, oldest first, and adds how many to the store's retention
	// counter (with p.Now as its time) in the transaction that deletes
	// them. An engine may split the work into several shorter
	// transactions; on an error, Deleted still says how many went. It
	// never deletes an item in any other state.
	RetryPrune(ctx context.Context, p PruneParams) (PruneResult, error)
	// RetryList walks items in id order and returns those matching its
	// filters (see ListParams), from one snapshot.
	RetryList(ctx context.Context, p ListParams) (ListResult, error)
	// RetryDue counts pending and scheduled items by next_at (see
	// DueParams), from one snapshot.
	RetryDue(ctx context.Context, p DueParams) (DueResult, error)
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
	// moves the rest. A store may also return once the items due first
	// are moved and move the rest in the background, each group before
	// its share of the spread begins as far as it can keep up, provided
	// the rest survive the process: it writes what is left in the
	// transaction of the first group, and any handle on the store
	// finishes it. Woken then counts the items the wake found, moved or
	// left to move.
	RetryWakeHost(ctx context.Context, p WakeHostParams) (WakeHostResult, error)
}

// Writers is a Store that says how many write transactions it runs at
// once. Concurrent retry.Scheduler.Observe calls keep up to that many
// shared writes in flight (at most four); a Store without the method gets
// one at a time, which suits an engine with a single writer: writes that
// queue for it would only split the batches that share it.
type Writers interface {
	RetryWriters() int
}

// SucceedClaimer is a Store that can settle successes and claim in one
// transaction. retry.Scheduler.SucceedAndClaim uses it when the Store has
// it, and otherwise settles first and claims after, in two.
type SucceedClaimer interface {
	// RetrySucceedClaim applies p.Succeed exactly as RetrySucceed would,
	// then p.Claim exactly as RetryClaim would, in one transaction: if
	// either step fails, neither takes effect. The claim sees the
	// successes, so an item marked done is never among its grants.
	RetrySucceedClaim(ctx context.Context, p SucceedClaimParams) (SucceedClaimResult, error)
}

// SucceedClaimParams is the input of SucceedClaimer.RetrySucceedClaim.
// Succeed.Now and Claim.Now are the same time.
type SucceedClaimParams struct {
	Succeed SucceedParams
	Claim   ClaimParams
}

// SucceedClaimResult is the output of SucceedClaimer.RetrySucceedClaim.
type SucceedClaimResult struct {
	Succeed SucceedResult
	Claim   ClaimResult
}

// PruneParams is the input of Store.RetryPrune.
type PruneParams struct {
	Now    time.Time
	Before time.Time
	Limit  int
}

// PruneResult is the output of Store.RetryPrune.
type PruneResult struct {
	Deleted int
}

// NextDueParams is the input of Store.RetryNextDue.
type NextDueParams struct{}

// NextDueResult is the output of Store.RetryNextDue.
type NextDueResult struct {
	// At is the earliest next_at of an item that is not ready; zero if
	// there is none.
	At time.Time
}

// AddParams is the input of Store.RetryAdd.
type AddParams struct {
	Now time.Time
	// Items have NotBefore set (never zero), Host normalised and no
	// duplicate ids. A new item is pending, due at NotBefore (ready if
	// that is not after Now), with Host (NULL when empty). An existing
	// item keeps its host.
	Items []NewItem
}

// AddResult is the output of Store.RetryAdd.
type AddResult struct {
	// Added counts the items inserted; the others existed.
	Added int
}

// NewItem is an item to insert (AddParams.Items, UpdateParams.AddMissing):
// what a store keeps of a retry.NewItem, checked and normalised by the
// Scheduler.
type NewItem struct {
	ID       string
	Priority int
	// Payload is nil for none.
	Payload []byte
	// NotBefore is when the item is first due, in UTC, whole microseconds.
	NotBefore time.Time
	// Host is normalised (retry.NormalizeHost), empty for none.
	Host string
}

// ClaimParams is the input of Store.RetryClaim.
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
//     ClaimResult.Expired for the Scheduler to record as a failure.
//
// Then it picks ready items with next_at <= Now, highest priority first and
// oldest next_at next, taking at most RetryQuota scheduled items while
// pending ones are available and filling the rest of N with whichever kind
// remains (internal/retrystore.Pick). Each picked item becomes leased:
// Attempts+1, a new lease generation from the database-wide counter,
// next_at = Now+Lease, Worker, and the k-th picked item (in any order the
// store likes) LeaseKey Keys[k].
type ClaimParams struct {
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

// ClaimResult is the output of Store.RetryClaim.
type ClaimResult struct {
	// Grants are the leased items, in any order.
	Grants []Grant
	// Expired are leased items whose lease ran out for the MaxExpiries-th
	// time in a row; they are still leased, with next_at in the past.
	Expired []string
}

// Grant is one item leased by Store.RetryClaim, as it is after the
// claim.
type Grant struct {
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

// UpdateParams is the input of Store.RetryUpdate.
type UpdateParams struct {
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
	// source, retry.Config.SyncSightings false).
	Lazy bool
	// Apply is called once per entry of IDs whose item exists, in order,
	// inside the store's transaction, with the item's record locked. It
	// changes r in place and reports whether it did; a non-nil error is
	// reported for entry i and must come with no change. A store may run
	// its transaction again after the database aborted it (PostgreSQL,
	// for a deadlock), calling Apply again on records read afresh, so
	// Apply must decide from r alone and overwrite, not accumulate, what
	// it records outside it.
	Apply func(i int, r *Record) (changed bool, err error)
}

// UpdateResult is the output of Store.RetryUpdate.
type UpdateResult struct {
	// Errs has one entry per entry of IDs: nil, ErrNotFound, or the error
	// Apply returned.
	Errs []error
}

// SucceedParams is the input of Store.RetrySucceed. IDs are distinct
// and sorted; Keys[i] is the lease token presented for IDs[i]. An item is
// marked done exactly when its LeaseKey equals Keys[i] and its SettledGen
// differs from its LeaseGen (its lease is live, or ran out without being
// claimed again): State Done, NextAt zero (NULL), not ready, Failures 0,
// Expiries 0, no Worker, SettledGen LeaseGen, SettledOp OpSucceed,
// UpdatedAt Now. This is the transition retry.Scheduler.Settle would make
// through RetryUpdate.
type SucceedParams struct {
	Now  time.Time
	IDs  []string
	Keys []string
}

// SucceedResult is the output of Store.RetrySucceed.
type SucceedResult struct {
	// Done says, per entry of IDs, whether the store marked it done.
	Done []bool
}

// Record is an item as stored. RetryUpdate loads every field and,
// when Apply reports a change, writes back every field except ID and
// CreatedAt, setting the ready mark from Ready(now). History and Sources
// are opaque to a store: it keeps the bytes as they are.
type Record struct {
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
	// Host is the item's host (retry.NormalizeHost), empty for none.
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
	// UpdateParams.AddMissing in this transaction; it is not stored.
	Inserted bool
}

// Ready reports whether the record belongs in the claim index at now.
func (r *Record) Ready(now time.Time) bool {
	return (r.State == Pending || r.State == Scheduled) && !r.NextAt.After(now)
}

// ObserveParams is the input of Store.RetryObserve; IDs are distinct
// and sorted. For each id that exists, for a pending or scheduled item the
// store sets priority = max(priority, min(priority+Boost, MaxPriority)) and
// next_at = min(next_at, PullTo); for every item it adds one to
// Observations and sets LastSeen = Now. A missing item is inserted
// (pending, due Now, with Priority and Payload, one observation) when
// AddIfMissing is set.
type ObserveParams struct {
	Now          time.Time
	IDs          []string
	Boost        int
	MaxPriority  int
	PullTo       time.Time
	AddIfMissing bool
	Priority     int
	Payload      []byte
	// WakeBefore is as in UpdateParams: after the commit, waiting
	// claims are woken only if an item was added, or a sighting left an
	// item pending or scheduled and due before it (zero: any).
	WakeBefore time.Time
	// Lazy lets the store acknowledge the sightings of existing ids once
	// they are committed, before they are on disk (retry.Config.SyncSightings
	// is false). Items added for AddIfMissing are written durably
	// whatever it says.
	Lazy bool
}

// ObserveResult is the output of Store.RetryObserve.
type ObserveResult struct {
	// Results has one entry per id, in order: the item's state, priority
	// and next_at after the sighting, Added if it was inserted, Unknown if
	// it is missing and was not.
	Results []Observed
}

// Observed says what Store.RetryObserve did with one id.
type Observed struct {
	ID string
	// Unknown is true when the id is not held and was not added.
	Unknown bool
	// Added is true when the id was unknown and has been added.
	Added    bool
	State    State
	Priority int
	NextAt   time.Time
}

// GetParams is the input of Store.RetryGet.
type GetParams struct {
	ID string
}

// GetResult is the output of Store.RetryGet.
type GetResult struct {
	Record  Record
	Payload []byte
}

// StatsParams is the input of Store.RetryStats.
type StatsParams struct {
	// Now decides what is due.
	Now time.Time
	// DueBounds, when set, asks for the due histogram too (Due), read as
	// RetryDue reads it with these bounds and from the same snapshot as
	// the counters, so that a report showing both never disagrees with
	// itself.
	DueBounds []time.Time
}

// StatsResult is the output of Store.RetryStats, read from one
// snapshot.
type StatsResult struct {
	// Counts are the store's item counters by state and last class, in any
	// order; the same pair may appear more than once (shards), and zero
	// counts may be left out.
	Counts []Count
	// DueNow counts the pending and scheduled items whose next_at has
	// come (ready or not), as RetryDue's first bucket does.
	DueNow int
	// OldestDue is the earliest next_at among them; zero if none.
	OldestDue time.Time
	// LeasesExpired counts the leased items whose lease (next_at) has run
	// out: claimable again, but not counted as due.
	LeasesExpired int
	// Due is RetryDue's answer for DueBounds; nil when they were not set.
	Due *DueResult
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

// Count is one item counter.
type Count struct {
	State State
	Class string
	N     int
}

// ForgetParams is the input of Store.RetryForget.
type ForgetParams struct {
	ID string
}

// ListParams is the input of Store.RetryList. The store walks the
// items with id > After in id order, at most Scan of them, and returns
// those matching every filter, at most Limit.
type ListParams struct {
	// States is empty (every state) or distinct states.
	States []State
	// Class, when not empty, keeps items whose last_class equals it.
	Class string
	// DueBefore, when not zero, keeps pending and scheduled items with
	// next_at < DueBefore.
	DueBefore time.Time
	After     string
	Limit     int
	Scan      int
}

// ListResult is the output of Store.RetryList.
type ListResult struct {
	// Records are the matching items, in id order, at most Limit.
	Records []Record
	// Last is the id of the last item walked when the walk stopped at Scan
	// items before Limit matched; empty otherwise.
	Last string
	// More is set when Limit items matched and another item follows the
	// last of them in id order.
	More bool
}

// DueParams is the input of Store.RetryDue.
type DueParams struct {
	// Bounds are ascending. Counts[0] counts next_at <= Bounds[0],
	// Counts[i] Bounds[i-1] < next_at <= Bounds[i], and the last one
	// next_at > the last bound.
	Bounds []time.Time
}

// DueResult is the output of Store.RetryDue.
type DueResult struct {
	// Counts has len(Bounds)+1 entries.
	Counts []int
	// Oldest is the earliest next_at of a pending or scheduled item; zero
	// if there is none.
	Oldest time.Time
}

// WakeHostParams is the input of Store.RetryWakeHost.
type WakeHostParams struct {
	Now time.Time
	// Host is normalised (retry.NormalizeHost) and not empty.
	Host string
	// Classes are the host-level classes, distinct and sorted.
	Classes []string
	// Spread is zero or more, a whole number of microseconds.
	Spread time.Duration
}

// WakeHostResult is the output of Store.RetryWakeHost.
type WakeHostResult struct {
	// Woken counts the items whose next_at the store moved.
	Woken int
}
