package guard

import "time"

// spreadShare is the most a spread lengthens an opening: a tenth.
const spreadShare = 10

// openFor returns how long the n-th opening in a row of the endpoint key
// lasts (n ≥ 1). Without growth that is OpenFor. With it, n × OpenFor up
// to MaxOpenFor, and from the second opening on, plus a spread of up to a
// tenth. The spread comes from a hash of the key and n rather than from a
// random source: endpoints that opened together land apart, one
// endpoint's periods are reproducible, and the hot path holds no shared
// generator.
func (g *Guard) openFor(key string, n int) time.Duration {
	base, limit := g.cfg.OpenFor, g.cfg.MaxOpenFor
	if limit <= base || n <= 1 {
		return base
	}
	d := limit
	if int64(n) <= int64(limit/base) {
		d = time.Duration(n) * base
	}
	return d + time.Duration(spread(key, n)%(uint64(d)/spreadShare+1))
}

// spread mixes an FNV-1a hash of key with n through the splitmix64
// finaliser, so that neighbouring n give unrelated values.
func spread(key string, n int) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	h += uint64(n) * 0x9e3779b97f4a7c15
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return h ^ h>>31
}
