package breakers

import (
	"sync"

	"github.com/sony/gobreaker/v2"
)

// Gobreaker holds one gobreaker TwoStepCircuitBreaker per key. The zero
// value is not usable; call NewGobreaker. It is safe for concurrent use.
type Gobreaker struct {
	settings gobreaker.Settings
	m        sync.Map // key -> *gobreaker.TwoStepCircuitBreaker[struct{}]
}

// NewGobreaker returns a registry whose breakers all use settings, except
// that each breaker is named after its key. Zero settings are gobreaker's
// defaults: trip after more than 5 consecutive failures, open for 60 s, one
// half-open request, counts never cleared while closed.
func NewGobreaker(settings gobreaker.Settings) *Gobreaker {
	return &Gobreaker{settings: settings}
}

// Breaker returns the breaker for key, creating it on first use.
func (g *Gobreaker) Breaker(key string) *gobreaker.TwoStepCircuitBreaker[struct{}] {
	if cb, ok := g.m.Load(key); ok {
		return cb.(*gobreaker.TwoStepCircuitBreaker[struct{}])
	}
	st := g.settings
	st.Name = key
	cb, _ := g.m.LoadOrStore(key, gobreaker.NewTwoStepCircuitBreaker[struct{}](st))
	return cb.(*gobreaker.TwoStepCircuitBreaker[struct{}])
}

// Allow asks key's breaker for permission. On success the caller must call
// done exactly once with the call's outcome (nil counts as a success).
func (g *Gobreaker) Allow(key string) (done func(error), err error) {
	return g.Breaker(key).Allow()
}
