package server

import (
	"context"
	"testing"
	"time"
)

// A Hostguard-Timeout hint gives the guard its deadline unless the
// request's own context ends sooner, and cancelling the request still
// ends the hint's context.
func TestHintContextKeepsTheEarlierDeadline(t *testing.T) {
	now := time.Now()
	hint := now.Add(2 * time.Second)

	c := &hintContext{Context: context.Background(), deadline: hint}
	if d, ok := c.Deadline(); !ok || !d.Equal(hint) {
		t.Errorf("without a deadline of the request's: %v, %v; want the hint's %v", d, ok, hint)
	}

	sooner, cancel := context.WithDeadline(context.Background(), now.Add(time.Second))
	defer cancel()
	c = &hintContext{Context: sooner, deadline: hint}
	if d, ok := c.Deadline(); !ok || !d.Equal(now.Add(time.Second)) {
		t.Errorf("with a sooner deadline of the request's: %v, %v; want it", d, ok)
	}

	later, cancelLater := context.WithDeadline(context.Background(), now.Add(time.Minute))
	c = &hintContext{Context: later, deadline: hint}
	if d, _ := c.Deadline(); !d.Equal(hint) {
		t.Errorf("with a later deadline of the request's: %v; want the hint's", d)
	}
	cancelLater()
	select {
	case <-c.Done():
	default:
		t.Error("cancelling the request did not end the hint's context")
	}
}
