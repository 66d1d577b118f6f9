package health

import (
	"context"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/internal/storeclock"
)

// Tracker keeps the durable per-name backoff records in a Store and answers
// whether a name is worth contacting. It is safe for concurrent use; make one
// per process and share it. Most callers want Touch after every attempt and
// Filter before a batch of attempts.
//
// A Tracker also holds the in-memory half of outage protection: the time of
// its last success of any name. That memory is per process on purpose: it
// says whether this machine's network works, which other nodes cannot know.
type Tracker struct {
	store Store
	cfg   Config
	// epoch anchors lastOK: offsets from it use the monotonic clock when
	// Config.Now is time.Now or a store's cluster clock (which counts on
	// it), so a wall-clock jump cannot fake an outage.
	epoch time.Time
	// lastOK is the offset from epoch of the latest success, or noSuccess.
	lastOK atomic.Int64
	// ignoring is set while failures are being ignored, so that an outage
	// logs one line, not one per failure.
	ignoring atomic.Bool
}

const noSuccess = math.MinInt64

// New returns a Tracker over store. It fails when store is nil, and with
// the *InputError of Config.Validate when cfg is bad.
func New(store Store, cfg Config) (*Tracker, error) {
	if store == nil {
		return nil, errNilStore
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Now = storeclock.Or(cfg.Now, store)
	cfg = cfg.withDefaults()
	t := &Tracker{store: store, cfg: cfg, epoch: cfg.Now()}
	t.lastOK.Store(noSuccess)
	return t, nil
}

// Result is what one touch did.
type Result struct {
	Status
	// Counted is false for a failure that outage protection ignored, and
	// true for every other touch.
	Counted bool `json:"counted"`
}

// Touch records the outcome of one attempt to reach name: ok is true when the
// host answered. It is TouchResult without the result.
func (t *Tracker) Touch(ctx context.Context, name string, ok bool) error {
	_, err := t.TouchResult(ctx, name, ok)
	return err
}

// TouchResult records the outcome of one attempt to reach name and returns
// the name's status afterwards.
//
// A success sets the streak to zero and clears the backoff. A failure grows
// the streak to n and backs off for the n-th step of Config.Schedule, unless
// outage protection ignores it: when this Tracker has seen no success of any
// name within Config.OutageAfter — and right after New it has seen none — a
// failure only updates LastFailure, Failures and IgnoredFailures. So the
// first failures after a process starts do not count until some name
// succeeds.
//
// A bad name is an error and changes nothing, not even the outage memory.
func (t *Tracker) TouchResult(ctx context.Context, name string, ok bool) (Result, error) {
	display, key, err := normalize(name)
	if err != nil {
		return Result{}, err
	}
	now := t.cfg.Now()
	outcome := Success
	if ok {
		t.noteSuccess(now)
	} else if t.outage(ctx, now) {
		outcome = IgnoredFailure
	} else {
		outcome = Failure
	}
	rec, err := t.store.HealthTouch(ctx, StoreTouchParams{
		Name:     key,
		Display:  display,
		Outcome:  outcome,
		Now:      dbTime(now),
		Schedule: t.cfg.Schedule,
	})
	if err != nil {
		return Result{}, err
	}
	if outcome == Failure && rec.ConsecutiveFails >= LogFromFails {
		t.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "health: name keeps failing",
			slog.String("name", rec.Name),
			slog.Int("consecutive_fails", rec.ConsecutiveFails),
			slog.Duration("backoff", BackoffFor(t.cfg.Schedule, rec.ConsecutiveFails)))
	}
	return Result{Status: t.status(rec, true, now), Counted: outcome != IgnoredFailure}, nil
}

// noteSuccess moves the outage memory forward to now (never back, since
// concurrent callers may arrive out of order).
func (t *Tracker) noteSuccess(now time.Time) {
	off := int64(now.Sub(t.epoch))
	for {
		cur := t.lastOK.Load()
		if cur != noSuccess && cur >= off {
			break
		}
		if t.lastOK.CompareAndSwap(cur, off) {
			break
		}
	}
	if t.ignoring.Load() { // a plain load keeps the common case free of writes to shared memory
		t.ignoring.Store(false)
	}
}

// outage reports whether a failure at now should be ignored, and logs the
// first one of each outage.
func (t *Tracker) outage(ctx context.Context, now time.Time) bool {
	if t.cfg.OutageAfter < 0 {
		return false
	}
	last := t.lastOK.Load()
	if last != noSuccess && int64(now.Sub(t.epoch))-last <= int64(t.cfg.OutageAfter) {
		return false
	}
	if !t.ignoring.Swap(true) {
		since := "this tracker started"
		if last != noSuccess {
			since = "the last success"
		}
		t.cfg.Logger.LogAttrs(ctx, slog.LevelInfo,
			"health: no success within the outage window; failures are not counted until one",
			slog.String("since", since),
			slog.Duration("outage_after", t.cfg.OutageAfter))
	}
	return true
}

// Healthy reports whether name passes the strict view: no counted failure
// since its last success. Unknown names are healthy.
func (t *Tracker) Healthy(ctx context.Context, name string) (bool, error) {
	st, err := t.Status(ctx, name)
	return st.Healthy, err
}

// Available reports whether name passes the time-based view: its backoff is
// over. Unknown names are available.
func (t *Tracker) Available(ctx context.Context, name string) (bool, error) {
	st, err := t.Status(ctx, name)
	return st.Available, err
}

// Status returns the state of name. An unknown name has Known false and is
// healthy and available.
func (t *Tracker) Status(ctx context.Context, name string) (Status, error) {
	display, key, err := normalize(name)
	if err != nil {
		return Status{}, err
	}
	rec, found, err := t.store.HealthGet(ctx, key)
	if err != nil {
		return Status{}, err
	}
	if !found {
		rec = Record{Name: key, Display: display}
	}
	return t.status(rec, found, t.cfg.Now()), nil
}

// Reset forgets name, so that it is healthy and available again; deleted is
// false when it was unknown. It is for an operator who knows a host was
// fixed; the next outcome starts a fresh record.
func (t *Tracker) Reset(ctx context.Context, name string) (deleted bool, err error) {
	_, key, err := normalize(name)
	if err != nil {
		return false, err
	}
	return t.store.HealthDelete(ctx, key)
}

// dbTime drops what a database cannot keep: the monotonic reading, the
// location and everything below a microsecond (PostgreSQL's precision).
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
