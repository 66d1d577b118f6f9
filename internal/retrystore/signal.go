package retrystore

import (
	"sync"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// Signal wakes everyone waiting for the next change. Wait hands out a
// channel that Fire closes; a waiter takes the channel before it looks at
// the store and waits on it afterwards, so that a change committed after
// the look cannot be missed. The zero Signal is ready for use and safe for
// concurrent use.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// Wait returns a channel that is closed at the next Fire.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Fire wakes every holder of a channel from Wait. With nobody waiting it
// costs a lock and nothing else.
func (s *Signal) Fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// Wakes reports whether a written item in state, due at next, is worth
// waking waiting claims for, given the store call's WakeBefore (zero:
// any waiting item is).
func Wakes(state retrydriver.State, next, before time.Time) bool {
	return (state == retrydriver.Pending || state == retrydriver.Scheduled) && (before.IsZero() || next.Before(before))
}
