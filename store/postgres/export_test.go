package postgres

import "time"

// SetRetryNotifyGap sets the least time between two of s's NOTIFYs, for a
// test that needs to see the spacing. Call it before the first write.
func SetRetryNotifyGap(s *Store, d time.Duration) {
	s.wake.mu.Lock()
	defer s.wake.mu.Unlock()
	s.wake.gap = d
}
