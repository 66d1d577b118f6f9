package fleet

// Kind is how a simulated host behaves.
type Kind int

const (
	// Healthy answers 200 after a small latency.
	Healthy Kind = iota
	// Dead accepts connections and never answers.
	Dead
	// Refused has no listener: every dial is refused.
	Refused
	// Flapping answers like a healthy host, except during scheduled outages,
	// when it either refuses connections or accepts and never answers.
	Flapping
	// Slow answers 200, but only shortly before the client's timeout.
	Slow
	// ServerError answers 5xx quickly, every time. It is up: it answers.
	ServerError
)

var kindNames = [...]string{"healthy", "dead", "refused", "flapping", "slow", "5xx"}

// Kinds lists every kind in a stable order.
func Kinds() []Kind { return []Kind{Healthy, Dead, Refused, Flapping, Slow, ServerError} }

// String returns a short lower-case name, usable as a table heading.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "unknown"
	}
	return kindNames[k]
}
