package health

import "time"

// Status is a Record read at one instant, with the views worked out.
type Status struct {
	Record
	// Known is false for a name without a record (never touched, or
	// Reset). Unknown names are healthy and available.
	Known bool `json:"known"`
	// Healthy is the strict view: ConsecutiveFails == 0.
	Healthy bool `json:"healthy"`
	// Available is the time-based view: BackoffUntil is not after now.
	Available bool `json:"available"`
	// RetryIn is how long the backoff still runs; zero when available.
	RetryIn time.Duration `json:"-"`
}

func (t *Tracker) status(rec Record, known bool, now time.Time) Status {
	st := Status{
		Record:    rec,
		Known:     known,
		Healthy:   rec.ConsecutiveFails == 0,
		Available: !rec.BackoffUntil.After(now),
	}
	if !st.Available {
		st.RetryIn = rec.BackoffUntil.Sub(now)
	}
	return st
}
