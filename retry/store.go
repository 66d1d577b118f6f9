package retry

import (
	"context"
	"time"
)

// Store is the durable part of a Scheduler. store/sqlite and store/postgres
// implement it and pass store/storetest; callers get one from
// hostguard.Open and never call these methods themselves.
//
// The Scheduler owns the rules (ladders, jitter, token checks); a Store owns
// atomicity: every method is one transaction, and on a shared database two
// nodes calling at once never hand one item to two workers or lose an
// update. Times passed in are already truncated to microseconds.
type Store interface {
	// RetryAdd inserts q.Items (validated, distinct, sorted by id). For an
	// id that exists it only raises the priority to the new one if higher.
	RetryAdd(ctx context.Context, q AddQuery) (AddResult, error)
	// RetryClaim makes due items ready (see ClaimQuery) and leases up to
	// q.N of them.
	RetryClaim(ctx context.Context, q ClaimQuery) (ClaimResult, error)
	// RetryUpdate locks the records of q.IDs, lets q.Apply change them, and
	// writes back the changed ones, all in one transaction. The result has
	// one entry per id: nil, ErrNotFound, or the error Apply returned.
	RetryUpdate(ctx context.Context, q UpdateQuery) ([]error, error)
	// RetrySucceed is the fast path for the commonest lease operation, in
	// one statement: see SucceedQuery. It reports, per entry, whether it
	// marked the item done; the Scheduler judges the others (repeats,
	// stale tokens, missing items) through RetryUpdate.
	RetrySucceed(ctx context.Context, q SucceedQuery) ([]bool, error)
	// RetryObserve records a sighting of each of q.IDs (see ObserveQuery)
	// and returns one result per id, in order. An unknown id gets a result
	// with Unknown set, unless q.AddIfMissing.
	RetryObserve(ctx context.Context, q ObserveQuery) ([]ObserveResult, error)
	// RetryGet returns one item, or ErrNotFound.
	RetryGet(ctx context.Context, id string) (Item, error)
	// RetryStats counts items; now decides what is due.
	RetryStats(ctx context.Context, now time.Time) (Stats, error)
	// RetryForget deletes one item, or returns ErrNotFound.
	RetryForget(ctx context.Context, id string) error
}

// AddQuery is the input of Store.RetryAdd.
type AddQuery struct {
	Now time.Time
	// Items have NotBefore set (never zero) and no duplicate ids.
	Items []NewItem
}

// ClaimQuery is the input of Store.RetryClaim.
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
// remains. Each picked item becomes leased: Attempts+1, a new lease
// generation from the database-wide counter, next_at = Now+Lease, Worker.
type ClaimQuery struct {
	Now          time.Time
	N            int
	RetryQuota   int
	Lease        time.Duration
	Worker       string
	PromoteLimit int
	MaxExpiries  int
}

// ClaimResult is the output of Store.RetryClaim.
type ClaimResult struct {
	// Grants are the leased items, in claim order.
	Grants []Grant
	// Expired are leased items whose lease ran out for the MaxExpiries-th
	// time in a row; they are still leased, with next_at in the past.
	Expired []string
}

// Grant is one item leased by Store.RetryClaim, as it is after the claim.
type Grant struct {
	ID        string
	Gen       int64
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

// UpdateQuery is the input of Store.RetryUpdate.
type UpdateQuery struct {
	Now time.Time
	// IDs may repeat; Apply then sees the same record again, with the
	// earlier changes in it.
	IDs []string
	// Apply is called once per entry of IDs whose item exists, in order,
	// inside the store's transaction, with the item's record locked. It
	// changes r in place and reports whether it did; a non-nil error is
	// reported for entry i and must come with no change.
	Apply func(i int, r *Record) (changed bool, err error)
}

// SucceedQuery is the input of Store.RetrySucceed. IDs are distinct and
// sorted; Gens[i] is the lease generation presented for IDs[i]. An item is
// marked done exactly when its LeaseGen equals Gens[i] and its SettledGen
// does not (its lease is live, or ran out without being claimed again):
// State Done, NextAt zero (NULL), not ready, Failures 0, Expiries 0, no
// Worker, SettledGen Gens[i], SettledOp OpSucceed, UpdatedAt Now. This is
// the transition Scheduler.Settle would make through RetryUpdate.
type SucceedQuery struct {
	Now  time.Time
	IDs  []string
	Gens []int64
}

// Record is the part of an item that lease operations read and change.
// A store loads every field and, when Apply reports a change, writes back
// every field except ID, setting the ready mark from Ready(now).
type Record struct {
	ID        string
	Priority  int
	State     State
	NextAt    time.Time // next due (pending, scheduled), lease end (leased), zero (done)
	Attempts  int
	Failures  int
	Expiries  int
	LastClass string
	History   []Attempt
	Worker    string
	// LeaseGen is the generation of the latest lease granted on the item.
	LeaseGen int64
	// SettledGen and SettledOp record the latest lease that was settled and
	// how, so that a repeated call can be told from a stale one.
	SettledGen int64
	SettledOp  Op
	UpdatedAt  time.Time
}

// Ready reports whether the record belongs in the claim index at now.
func (r *Record) Ready(now time.Time) bool {
	return (r.State == Pending || r.State == Scheduled) && !r.NextAt.After(now)
}

// ObserveQuery is the input of Store.RetryObserve; IDs are distinct and
// sorted. For each id that exists, for a pending or
// scheduled item the store sets priority = max(priority,
// min(priority+Boost, MaxPriority)) and next_at = min(next_at, PullTo); for
// every item it adds one to Observations and sets LastSeen = Now. A missing
// item is inserted (pending, due Now, with Priority and Payload) when
// AddIfMissing is set.
type ObserveQuery struct {
	Now          time.Time
	IDs          []string
	Boost        int
	MaxPriority  int
	PullTo       time.Time
	AddIfMissing bool
	Priority     int
	Payload      []byte
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
