package breakers

import (
	"net/http"
	"sync"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
)

// Failsafe holds one failsafe-go circuit breaker per key, typed on
// *http.Response so a breaker may judge responses as well as errors. The
// zero value is not usable; call NewFailsafe. It is safe for concurrent use.
type Failsafe struct {
	build func() circuitbreaker.CircuitBreaker[*http.Response]
	m     sync.Map // key -> circuitbreaker.CircuitBreaker[*http.Response]
}

// NewFailsafe returns a registry that calls build once per new key. A nil
// build means failsafe-go's defaults (circuitbreaker.NewWithDefaults): open
// after one failure, close after one success, stay open for one minute,
// where only a non-nil error is a failure.
func NewFailsafe(build func() circuitbreaker.CircuitBreaker[*http.Response]) *Failsafe {
	if build == nil {
		build = circuitbreaker.NewWithDefaults[*http.Response]
	}
	return &Failsafe{build: build}
}

// Breaker returns the breaker for key, creating it on first use. Callers
// use its TryAcquirePermit, then RecordResult or RecordError.
func (f *Failsafe) Breaker(key string) circuitbreaker.CircuitBreaker[*http.Response] {
	if cb, ok := f.m.Load(key); ok {
		return cb.(circuitbreaker.CircuitBreaker[*http.Response])
	}
	cb, _ := f.m.LoadOrStore(key, f.build())
	return cb.(circuitbreaker.CircuitBreaker[*http.Response])
}
