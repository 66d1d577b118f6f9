package retrystore

// WakeShare is where in a wake's spread (an offset in the spread's unit)
// the items after the first done of total begin: the spread divided
// evenly among the items in the order the wake moves them, never past its
// end (the total is counted before the wake and may grow meanwhile). Both
// engines give each chunk of a wake the slice between the shares of its
// first and its last item, so that a chunk's items land side by side in
// the index on next_at and earlier chunks are due earlier.
func WakeShare(spread, done, total int64) int64 {
	if done >= total || total == 0 {
		return spread
	}
	return int64(float64(spread) * float64(done) / float64(total))
}
