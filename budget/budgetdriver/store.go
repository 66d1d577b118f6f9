package budgetdriver

import (
	"context"
	"time"
)

// Store is the durable, shared part of a budget.Budget: usage counters
// keyed by (UTC day, scope, kind), one pacing slot per source, and
// reservations. store/sqlite and store/postgres implement it;
// hostguard.Open returns a store that does.
//
// Implementations must be safe for concurrent use, and every method must be
// atomic even when several processes (nodes) share the database: the
// counters of N nodes together never exceed a limit by one.
//
// Implementations take every time from their parameters, never from the
// database clock, so that fake clocks work. Days are UTC midnights.
type Store interface {
	// BudgetAdmit decides a batch of admissions in one transaction, in
	// order, each exactly as if it were alone and atomic (the engines of
	// this module share one implementation of the rules below):
	//
	//  0. A SettingsStore answers Stale when p.Settings is not the
	//     stored settings generation, read in the same transaction;
	//     nothing changes.
	//  1. Every charge with Limited set is checked: it refuses when its
	//     counter is closed at Now (ClosedUntil after Now) or when
	//     used + Cost > Limit, computed without overflow. The first
	//     refusing charge (in slice order) is reported; nothing changes.
	//  2. If PaceKey is set and Touch is false, the slot is
	//     max(next_at, Now); it refuses when slot > Now + MaxWait (nothing
	//     changes), else next_at becomes slot + Pace. With Touch,
	//     next_at becomes max(next_at, Now + Pace) and nothing refuses.
	//     Without PaceKey the slot is Now.
	//  3. Every charge adds Cost to its counter, which stops at
	//     budget.MaxAmount; Grant, if set, is stored.
	//
	// A counter that does not exist yet starts at zero, except
	// (Day, "", CounterTotal), which starts at the sum of the day's
	// CounterSource counters, so that a total cap set during the day still
	// counts the day's earlier work.
	//
	// Batching is what lets a node's concurrent admissions share one commit.
	// Implementations lock (or otherwise serialise) the counters and slots
	// in one global order — counters by (Day, Scope, Kind) in byte order,
	// then slots by key — so that concurrent batches of several nodes
	// cannot deadlock. It returns one result per admission.
	BudgetAdmit(ctx context.Context, batch []AdmitParams) ([]AdmitResult, error)

	// BudgetCancel undoes an admission whose request was never made (a
	// Wait whose context ended before its slot): it subtracts each charge's
	// Cost (a counter never goes below zero), deletes the grant GrantID if
	// set, and gives the pacing slot
	// back (next_at = Slot) only if nobody has taken a later slot since
	// (next_at = Slot + Pace); a later taker keeps its slot, and the gap
	// simply stays unused. Charges come in lock order.
	BudgetCancel(ctx context.Context, p CancelParams) error

	// BudgetSettle closes reservation p.ID at p.Actual: the grant's
	// counters — (Day, "", Kind) and, when the grant has a Source,
	// (Day, Source, Kind) — change by Actual − Cost, staying within
	// 0..budget.MaxAmount. It returns the grant
	// as stored after the call. Errors: ErrGrantNotFound; ErrGrantExpired
	// when the grant's Day is before p.Today (nothing changes: an
	// unsettled reservation stays charged in full); ErrGrantClosed when the
	// grant was closed with a different figure. Closing again with the same
	// figure changes nothing and succeeds.
	BudgetSettle(ctx context.Context, p SettleParams) (Grant, error)

	// BudgetClose marks counter (Day, Scope, Kind) closed until p.Until,
	// creating it if needed: every Limited charge on it refuses while Now
	// is before the counter's ClosedUntil. A counter already closed until
	// later stays closed until then.
	BudgetClose(ctx context.Context, p CloseParams) error

	// BudgetUsage returns every counter of day, in any order.
	BudgetUsage(ctx context.Context, day time.Time) ([]Counter, error)

	// BudgetPrune deletes counters and grants of days before before, and
	// pacing slots whose next_at is before it. It returns how many rows it
	// deleted.
	BudgetPrune(ctx context.Context, before time.Time) (int64, error)
}

// Charge is one counter that an admission adds to.
type Charge struct {
	// Scope is a source name, or "" for a cluster-wide counter.
	Scope string
	Kind  Kind
	// Cost is added to the counter when the admission succeeds (1 to
	// budget.MaxAmount).
	Cost int64
	// Limited makes the charge refuse when used + Cost > Limit or the
	// counter is closed; otherwise the charge only records.
	Limited bool
	Limit   int64
}

// AdmitParams is the input of Store.BudgetAdmit.
type AdmitParams struct {
	Day time.Time // the UTC midnight of Now's day
	Now time.Time // truncated to microseconds
	// Charges, each counter at most once.
	Charges []Charge
	// PaceKey is the source whose pacing slot the request takes; "" for
	// none.
	PaceKey string
	Pace    time.Duration
	// MaxWait is how far in the future a slot may lie (0 for Admit).
	MaxWait time.Duration
	// Touch moves the slot without ever refusing (foreground requests).
	Touch bool
	// Grant is the reservation to store, or nil.
	Grant *Grant
	// Settings is the settings generation the admission was planned
	// under. A SettingsStore answers Stale (and changes nothing) when the
	// stored generation differs; other stores ignore it.
	Settings int64
}

// AdmitResult is the output of Store.BudgetAdmit.
type AdmitResult struct {
	Admitted bool
	// Refused is the index in Charges of the refusing charge, or -1 when
	// the refusal is for pacing (or the admission succeeded).
	Refused int
	// Used and Closed describe the refusing counter; ClosedUntil is when
	// its closing ends, when Closed.
	Used        int64
	Closed      bool
	ClosedUntil time.Time
	// Slot is when the request may start: on success, the slot taken; on
	// a pacing refusal, the first free slot.
	Slot time.Time
	// Stale is true when the admission was planned under settings that
	// have changed since (see AdmitParams.Settings): nothing changed,
	// and the Budget plans it again under the current settings.
	Stale bool
}

// CancelParams is the input of Store.BudgetCancel.
type CancelParams struct {
	Day     time.Time
	Charges []Charge // as admitted; Cost is subtracted
	PaceKey string
	Pace    time.Duration
	Slot    time.Time
	GrantID string
}

// SettleParams is the input of Store.BudgetSettle.
type SettleParams struct {
	ID     string
	Actual int64 // ≥ 0
	Today  time.Time
	Now    time.Time
}

// CloseParams is the input of Store.BudgetClose.
type CloseParams struct {
	Day   time.Time
	Scope string
	Kind  Kind
	// Until is when the closing ends: after Day starts, at most the next
	// UTC midnight.
	Until time.Time
}

// Grant is a reservation as the store keeps it.
type Grant struct {
	ID        string
	Day       time.Time
	Source    string
	Kind      Kind
	Cost      int64
	Actual    *int64 // nil while open
	CreatedAt time.Time
	ClosedAt  time.Time // zero while open
}

// Counter is one usage counter of a day.
type Counter struct {
	Scope string
	Kind  Kind
	Used  int64
	// ClosedUntil is when the counter's closing ends (see
	// Store.BudgetClose); zero when it was never closed.
	ClosedUntil time.Time
}
