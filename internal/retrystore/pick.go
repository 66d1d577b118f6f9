// Package retrystore holds what the retry scheduler's storage engines
// share and the scheduler's users never see: the claim quota for engines
// that pick candidates outside SQL, the wake-up signal behind blocking
// claims, and how a host's wake divides its spread among its chunks.
package retrystore

// Pick applies a claim's retry quota to the best pending and scheduled
// candidates (each list sorted best first, at most n long): at most quota
// scheduled ones while pending ones are available, the rest of n filled with
// whichever kind remains. The picks come back pending first, each kind in
// its order; the scheduler puts the leases in claim order.
func Pick[T any](pending, scheduled []T, n, quota int) []T {
	retries := min(len(scheduled), quota)
	fresh := min(len(pending), n-retries)
	retries = min(len(scheduled), n-fresh)
	out := make([]T, 0, fresh+retries)
	return append(append(out, pending[:fresh]...), scheduled[:retries]...)
}
