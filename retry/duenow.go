package retry

import (
	"context"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// DueNowResult says what DueNow did to an item.
type DueNowResult struct {
	ID    string `json:"id"`
	State State  `json:"state"`
	// NextAt is when the item is due: the call's time for an item it
	// moved, unchanged otherwise.
	NextAt time.Time `json:"next_at,omitzero"`
	// Moved is false when the item was leased or done, which DueNow leaves
	// alone, or already due.
	Moved bool `json:"moved"`
}

// DueNow makes a pending or scheduled item due at once, for an operator
// who knows the cause of its failures is gone. It neither counts as an
// attempt nor changes the item's failures, priority or history, so a new
// failure steps the ladder from where it was. A leased item is left to
// its worker and a done one stays done (Moved is false). An unknown id is
// ErrNotFound.
func (s *Scheduler) DueNow(ctx context.Context, id string) (DueNowResult, error) {
	if err := checkID(id); err != nil {
		return DueNowResult{}, err
	}
	now := s.now()
	var res DueNowResult
	ur, err := s.store.RetryUpdate(ctx, retrydriver.UpdateParams{
		Now: now,
		IDs: []string{id},
		Apply: func(_ int, r *retrydriver.Record) (bool, error) {
			res = DueNowResult{ID: r.ID, State: State(r.State), NextAt: r.NextAt}
			if (r.State != retrydriver.Pending && r.State != retrydriver.Scheduled) || !r.NextAt.After(now) {
				return false, nil
			}
			r.NextAt = now
			r.UpdatedAt = now
			res.NextAt, res.Moved = now, true
			return true, nil
		},
	})
	if err != nil {
		return DueNowResult{}, err
	}
	if err := ur.Errs[0]; err != nil {
		return DueNowResult{}, err
	}
	return res, nil
}
