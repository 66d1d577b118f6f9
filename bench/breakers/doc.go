// Package breakers keeps one peer circuit breaker per endpoint, so that
// sony/gobreaker and failsafe-go can be measured against hostguard's guard
// on the same terms: a breaker per origin, created on first use, looked up
// without a global lock.
//
// Neither peer has a per-host registry of its own; a program that wants one
// breaker per host writes a map like the ones here. The wrappers are meant
// to be what a careful user would write (a sync.Map, the peer's cheapest
// two-step API), not a handicap: the benchmarks hand the peers their key
// ready-made, while hostguard derives its key from the raw URL on every call.
package breakers
