package retry

import (
	"context"
	"time"
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
}

// Observe records fresh evidence that the item may now succeed — it was
// seen again, a source reported it alive. A pending or scheduled item that
// waits longer than Config.ReactivateWithin becomes due within that time,
// and its priority rises by the boost, up to Config.ObserveMaxPriority (an
// item already above that keeps its priority), so repeated sightings
// raise it further. A leased or done item only has the sighting counted:
// the worker holding it is not disturbed and finished work is not reopened.
// Observations never count as attempts and never touch the history.
func (s *Scheduler) Observe(ctx context.Context, id string, p ObserveParams) (ObserveResult, error) {
	if err := checkID(id); err != nil {
		return ObserveResult{}, err
	}
	if p.Boost < 0 {
		return ObserveResult{}, invalidf("observe %s: Boost %d is negative", quoteID(id), p.Boost)
	}
	if err := checkPriority("observe: Boost", p.Boost); err != nil {
		return ObserveResult{}, err
	}
	if err := checkPriority("observe: Priority", p.Priority); err != nil {
		return ObserveResult{}, err
	}
	if err := checkPayload(id, p.Payload); err != nil {
		return ObserveResult{}, err
	}
	boost := p.Boost
	if boost == 0 {
		boost = s.cfg.ObserveStep
	}
	now := s.now()
	res, err := s.store.RetryObserve(ctx, ObserveQuery{
		Now:          now,
		ID:           id,
		Boost:        boost,
		MaxPriority:  s.cfg.ObserveMaxPriority,
		PullTo:       now.Add(s.cfg.ReactivateWithin),
		AddIfMissing: p.AddIfMissing,
		Priority:     p.Priority,
		Payload:      p.Payload,
	})
	if err != nil {
		return ObserveResult{}, err
	}
	if res.State == Leased || res.State == Done {
		res.NextAt = time.Time{}
	}
	return res, nil
}
