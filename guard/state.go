package guard

// State is where an endpoint's circuit breaker stands.
type State int

const (
	// Closed lets every request through; the zero value and the state of
	// an endpoint the guard knows nothing about.
	Closed State = iota
	// Open fails every non-exempt Acquire fast, without network work.
	Open
	// HalfOpen follows Open once OpenFor has passed: exactly one trial
	// request is let through, everyone else keeps failing fast until it
	// settles.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "unknown"
}
