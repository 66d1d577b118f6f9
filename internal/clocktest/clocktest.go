// Package clocktest provides a fake clock for tests: time that moves only
// when the test moves it.
package clocktest

import (
	"sync"
	"time"
)

// A Clock is a fake clock. Its Now method is what a Config's Now field
// wants; Advance and Set move it. The zero Clock reads the zero time.Time.
// A Clock is safe for concurrent use, so the code under test may read it
// from its own goroutines while the test moves it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a Clock that reads start until it is moved.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's current reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward (backward if d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t, which may be before its current reading.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
