package retry

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/internal/storeclock"
	"github.com/hostguard/hostguard/retry/retrydriver"
)

// promoteLimit bounds how many newly due items one claim makes ready, so
// that a mass wake-up is spread over several claims instead of stalling one.
const promoteLimit = 512

// MaxAdd is the most items one Add call takes.
const MaxAdd = 10_000

// maxNotBefore bounds how far ahead work may be scheduled, far inside what
// both stores' time columns hold.
const maxNotBefore = 100 * 365 * 24 * time.Hour

// Scheduler decides when failed work is tried again. It is safe for
// concurrent use, and several Schedulers (in one process or on several
// nodes) may share one store. Build one with New; most callers want Add,
// Claim and then Succeed or Fail for each lease.
type Scheduler struct {
	store    Store
	cfg      Config
	waiting  atomic.Int64
	observes observeQueue
}

// New returns a Scheduler over store. It rejects a Config with a bad field,
// naming it.
func New(store Store, cfg Config) (*Scheduler, error) {
	if store == nil {
		return nil, errors.New("retry: nil store")
	}
	cfg.Now = storeclock.Or(cfg.Now, store)
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{store: store, cfg: cfg}
	s.observes.leadersMax = 1
	if w, ok := store.(retrydriver.Writers); ok {
		s.observes.leadersMax = min(max(w.RetryWriters(), 1), maxObserveLeaders)
	}
	return s, nil
}

// now is the configured clock at the stores' precision, in UTC.
func (s *Scheduler) now() time.Time {
	return s.cfg.Now().UTC().Truncate(time.Microsecond)
}

// Add stores new work. An id that is already held is not an error and keeps
// its state, schedule, payload and history — a failed item is not given a
// fresh start by being found again (use Observe for that) — but takes the
// new priority if it is higher. Repeated ids within one call are merged the
// same way. All items are checked before anything is written; a bad one is
// an *InputError whose Field names it ("items[3].id").
func (s *Scheduler) Add(ctx context.Context, items ...NewItem) (AddResult, error) {
	if len(items) == 0 {
		return AddResult{}, nil
	}
	if len(items) > MaxAdd {
		return AddResult{}, invalid("items", "%d items in one Add, more than %d", len(items), MaxAdd)
	}
	now := s.now()
	byID := make(map[string]int, len(items))
	batch := make([]NewItem, 0, len(items))
	for i, it := range items {
		field := "items[" + strconv.Itoa(i) + "]"
		if err := checkID(it.ID); err != nil {
			return AddResult{}, inField(field, err)
		}
		if err := checkPriority("priority", it.Priority); err != nil {
			return AddResult{}, inField(field, err)
		}
		if err := checkPayload(it.Payload); err != nil {
			return AddResult{}, inField(field, err)
		}
		h, err := NormalizeHost(it.Host)
		if err != nil {
			return AddResult{}, inField(field, err)
		}
		it.Host = h
		if it.NotBefore.After(now.Add(maxNotBefore)) {
			return AddResult{}, invalid(field+".not_before", "%v is more than 100 years ahead", it.NotBefore)
		}
		if it.NotBefore.IsZero() || it.NotBefore.Before(now) {
			it.NotBefore = now
		}
		it.NotBefore = it.NotBefore.UTC().Truncate(time.Microsecond)
		if j, ok := byID[it.ID]; ok {
			batch[j].Priority = max(batch[j].Priority, it.Priority)
			if batch[j].Host == "" {
				batch[j].Host = it.Host
			}
			continue
		}
		byID[it.ID] = len(batch)
		batch = append(batch, it)
	}
	// A fixed order makes concurrent batches lock rows in the same order,
	// so they cannot deadlock on a shared database.
	slices.SortFunc(batch, func(a, b NewItem) int { return strings.Compare(a.ID, b.ID) })
	rows := make([]retrydriver.NewItem, len(batch))
	for i, it := range batch {
		rows[i] = retrydriver.NewItem{ID: it.ID, Priority: it.Priority, Payload: it.Payload, NotBefore: it.NotBefore, Host: it.Host}
	}
	res, err := s.store.RetryAdd(ctx, retrydriver.AddParams{Now: now, Items: rows})
	if err != nil {
		return AddResult{}, err
	}
	return AddResult{Added: res.Added, Existing: len(items) - res.Added}, nil
}

// Get returns the item with the given id, or ErrNotFound.
func (s *Scheduler) Get(ctx context.Context, id string) (Item, error) {
	if err := checkID(id); err != nil {
		return Item{}, err
	}
	res, err := s.store.RetryGet(ctx, retrydriver.GetParams{ID: id})
	if err != nil {
		return Item{}, err
	}
	return itemFrom(&res.Record, res.Payload)
}

// Forget deletes an item, whatever its state: the only way an item is ever
// removed. A lease on it is lost (its operations get ErrNotFound). An
// unknown id is ErrNotFound.
func (s *Scheduler) Forget(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	return s.store.RetryForget(ctx, retrydriver.ForgetParams{ID: id})
}

// Stats counts items by state and by failure class, and says how much work
// is due and how long the oldest due item has waited. The counts come from
// counters the store keeps exact; the due count walks the index of due
// items, so it costs time in proportion to the backlog of due work (tens of
// milliseconds per hundred thousand due items), not to the item count. Call
// it for monitoring, not per claim.
func (s *Scheduler) Stats(ctx context.Context) (Stats, error) {
	now := s.now()
	res, err := s.store.RetryStats(ctx, retrydriver.StatsParams{Now: now})
	if err != nil {
		return Stats{}, err
	}
	st := statsFrom(res, now)
	st.Schedule = s.Schedule()
	return st, nil
}

// Schedule returns the ladders, reactivation window and retention the
// Scheduler applies, defaults filled in.
func (s *Scheduler) Schedule() Schedule {
	return Schedule{
		Default:          slices.Clone(s.cfg.Default),
		Classes:          maps.Clone(s.cfg.Classes),
		ReactivateWithin: s.cfg.ReactivateWithin,
		KeepDone:         s.cfg.KeepDone,
		SyncSightings:    s.cfg.SyncSightings,
		WakeJitter:       s.cfg.WakeJitter,
	}
}
