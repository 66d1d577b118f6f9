package retry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// ObserveParams qualifies a sighting passed to Observe.
type ObserveParams struct {
	// Boost is how much this sighting raises the item's priority. Zero
	// means Config.ObserveStep (default 1); negative is an error. Boosts
	// never lift an item above Config.ObserveMaxPriority.
	Boost int `json:"boost,omitempty"`
	// AddIfMissing adds an unknown id as a new pending item, due at once,
	// with Priority and Payload. Without it an unknown id is ErrNotFound.
	AddIfMissing bool   `json:"add_if_missing,omitempty"`
	Priority     int    `json:"priority,omitempty"`
	Payload      []byte `json:"payload,omitempty"`
	// Source names who saw the item — a DHT node, a tracker, a peer, an
	// indexer; optional, at most MaxSourceBytes. The item keeps the
	// sighting among its Sources, and only a source's first sighting (while
	// the item remembers it) raises the priority: one source repeating
	// itself pulls the item forward but does not push it up without bound.
	// Without a source every sighting raises the priority.
	Source string `json:"source,omitempty"`
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

// Observe records fresh evidence that the item may now succeed — it was
// seen again, a source reported it alive. A pending or scheduled item that
// waits longer than Config.ReactivateWithin becomes due within that time,
// and its priority rises by the boost, up to Config.ObserveMaxPriority (an
// item already above that keeps its priority), so repeated sightings
// raise it further. A leased or done item only has the sighting counted:
// the worker holding it is not disturbed and finished work is not reopened.
// Observations never count as attempts and never touch the history.
// An unknown id is ErrNotFound unless p.AddIfMissing.
//
// Concurrent Observe calls share transactions: a call that arrives while
// others are being written waits for the next write, which carries every
// call that came meanwhile (with the same parameters, one ObserveMany each);
// on a store that runs writes side by side (retrydriver.Writers) up to four
// such writes are in flight at once. Two calls for one id are written one
// after the other, as two sightings. Each call still returns only once its own
// sighting is committed, so a crawler reporting sightings one by one from
// many goroutines gets ObserveMany's throughput without batching them
// itself. A call whose context ends before its sighting is taken into a
// write returns the context's error and writes nothing; once taken, it
// returns the write's outcome.
func (s *Scheduler) Observe(ctx context.Context, id string, p ObserveParams) (ObserveResult, error) {
	if err := checkID(id); err != nil {
		return ObserveResult{}, err
	}
	if err := checkObserveParams(p); err != nil {
		return ObserveResult{}, err
	}
	res, err := s.observeShared(ctx, id, p)
	if err != nil {
		return ObserveResult{}, err
	}
	if res.Unknown {
		return ObserveResult{}, ErrNotFound
	}
	return res, nil
}

func checkObserveParams(p ObserveParams) error {
	if p.Boost < 0 {
		return invalid("boost", "%d is negative", p.Boost)
	}
	if err := checkPriority("boost", p.Boost); err != nil {
		return err
	}
	if err := checkPriority("priority", p.Priority); err != nil {
		return err
	}
	if err := checkPayload(p.Payload); err != nil {
		return err
	}
	return checkSource(p.Source)
}

// ObserveMany is Observe for a batch of sightings, in one transaction; a
// crawler that sees ids in bulk should use it. It returns one result per
// id, in order; an unknown id gets Unknown set (or is added, with
// p.AddIfMissing). An id repeated within one call counts once.
func (s *Scheduler) ObserveMany(ctx context.Context, ids []string, p ObserveParams) ([]ObserveResult, error) {
	if len(ids) > MaxAdd {
		return nil, invalid("ids", "%d ids in one call, more than %d", len(ids), MaxAdd)
	}
	for i, id := range ids {
		if err := checkID(id); err != nil {
			return nil, invalid("ids["+strconv.Itoa(i)+"]", "%s", err.(*InputError).Reason)
		}
	}
	if err := checkObserveParams(p); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return s.observeMany(ctx, ids, p)
}

// observeMany is ObserveMany after its checks.
func (s *Scheduler) observeMany(ctx context.Context, ids []string, p ObserveParams) ([]ObserveResult, error) {
	boost := p.Boost
	if boost == 0 {
		boost = s.cfg.ObserveStep
	}
	// Sorted and distinct: concurrent batches then lock rows in one order.
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	now := s.now()
	pullTo := now.Add(s.cfg.ReactivateWithin)
	var res []ObserveResult
	if p.Source != "" {
		var err error
		if res, err = s.observeFrom(ctx, sorted, p, boost, now, pullTo); err != nil {
			return nil, err
		}
	} else {
		sr, err := s.store.RetryObserve(ctx, retrydriver.ObserveParams{
			Now:          now,
			IDs:          sorted,
			Boost:        boost,
			MaxPriority:  s.cfg.ObserveMaxPriority,
			PullTo:       pullTo,
			AddIfMissing: p.AddIfMissing,
			Priority:     p.Priority,
			Payload:      p.Payload,
			WakeBefore:   wakeBefore(now),
			Lazy:         !s.cfg.SyncSightings,
		})
		if err != nil {
			return nil, err
		}
		res = make([]ObserveResult, len(sr.Results))
		for i, r := range sr.Results {
			res[i] = ObserveResult{ID: r.ID, Unknown: r.Unknown, Added: r.Added, State: State(r.State), Priority: r.Priority, NextAt: r.NextAt}
		}
	}
	if len(res) != len(sorted) {
		return nil, fmt.Errorf("retry: store answered %d of %d observations", len(res), len(sorted))
	}
	byID := make(map[string]ObserveResult, len(res))
	for i, r := range res {
		r.ID = sorted[i]
		if r.State == Leased || r.State == Done {
			r.NextAt = time.Time{}
		}
		byID[r.ID] = r
	}
	out := make([]ObserveResult, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

// observeFrom records sightings that name their source through the
// general update path, since what they change depends on the evidence the
// item already holds.
func (s *Scheduler) observeFrom(ctx context.Context, ids []string, p ObserveParams, boost int, now, pullTo time.Time) ([]ObserveResult, error) {
	up := retrydriver.UpdateParams{
		Now:        now,
		IDs:        ids,
		WakeBefore: wakeBefore(now),
		Lazy:       !s.cfg.SyncSightings,
		Apply: func(_ int, r *retrydriver.Record) (bool, error) {
			return s.applyObserve(r, p.Source, boost, now, pullTo)
		},
	}
	if p.AddIfMissing {
		up.AddMissing = &retrydriver.NewItem{Priority: p.Priority, Payload: p.Payload}
	}
	res := make([]ObserveResult, len(ids))
	apply := up.Apply
	up.Apply = func(i int, r *retrydriver.Record) (bool, error) {
		changed, err := apply(i, r)
		if err == nil {
			res[i] = ObserveResult{ID: r.ID, Added: r.Inserted, State: State(r.State), Priority: r.Priority, NextAt: r.NextAt}
		}
		return changed, err
	}
	ur, err := s.store.RetryUpdate(ctx, up)
	if err != nil {
		return nil, err
	}
	for i, e := range ur.Errs {
		switch {
		case e == nil:
		case errors.Is(e, ErrNotFound):
			res[i] = ObserveResult{ID: ids[i], Unknown: true}
		default:
			return nil, e
		}
	}
	return res, nil
}

// applyObserve records one sighting from source: the evidence entry, the
// count and time, and for a waiting item the pull forward and — on the
// source's first sighting that the item remembers — the boost.
func (s *Scheduler) applyObserve(r *retrydriver.Record, source string, boost int, now, pullTo time.Time) (bool, error) {
	es, err := decodeEvidence(r.Sources)
	if err != nil {
		return false, fmt.Errorf("retry: item %q: %w", r.ID, err)
	}
	fresh := !hasEvidence(es, source, "")
	r.Sources = encodeEvidence(noteEvidence(es, Evidence{Source: source, At: now}))
	r.Observations++
	r.LastSeen = now
	r.UpdatedAt = now
	if r.State == retrydriver.Pending || r.State == retrydriver.Scheduled {
		if fresh && !r.Inserted {
			r.Priority = max(r.Priority, min(r.Priority+boost, s.cfg.ObserveMaxPriority))
		}
		if r.NextAt.After(pullTo) {
			r.NextAt = pullTo
		}
	}
	return true, nil
}
