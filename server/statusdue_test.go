package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// histReader counts its reads and answers a histogram whose Waiting is
// the read's number, so a test can tell a fresh answer from a reused one.
type histReader struct {
	reads int
	cost  time.Duration
	err   error
}

func (h *histReader) read(context.Context) (queueSnapshot, error) {
	h.reads++
	// The read's cost is what the cache measures; it stands for a slow
	// count, not for synchronisation.
	time.Sleep(h.cost)
	if h.err != nil {
		return queueSnapshot{}, h.err
	}
	return queueSnapshot{Due: retry.DueHistogram{Waiting: h.reads}}, nil
}

func TestDueCacheReusesAnExpensiveRead(t *testing.T) {
	var c dueCache
	r := &histReader{cost: 100 * time.Millisecond}
	first, err := c.get(context.Background(), r.read)
	if err != nil {
		t.Fatal(err)
	}
	// Within ten times its cost (a second), the read is reused.
	second, err := c.get(context.Background(), r.read)
	if err != nil {
		t.Fatal(err)
	}
	if r.reads != 1 || second.Due.Waiting != first.Due.Waiting {
		t.Fatalf("reads = %d, answers %d then %d; want one read, shared", r.reads, first.Due.Waiting, second.Due.Waiting)
	}
	// Once it is older than that, the next report reads again.
	c.readAt = c.readAt.Add(-2 * time.Second)
	third, err := c.get(context.Background(), r.read)
	if err != nil {
		t.Fatal(err)
	}
	if r.reads != 2 || third.Due.Waiting != 2 {
		t.Fatalf("after the reuse window: reads = %d, answer %d; want a second read", r.reads, third.Due.Waiting)
	}
}

func TestDueCacheReadsACheapOneAfresh(t *testing.T) {
	var c dueCache
	r := &histReader{}
	if _, err := c.get(context.Background(), r.read); err != nil {
		t.Fatal(err)
	}
	// A read that cost microseconds is reused for microseconds: a report
	// a millisecond later sees new counts. The cost is set rather than
	// measured, so that a read slowed by a loaded machine cannot widen
	// the window past the millisecond.
	c.took = time.Microsecond
	c.readAt = c.readAt.Add(-time.Millisecond)
	h, err := c.get(context.Background(), r.read)
	if err != nil {
		t.Fatal(err)
	}
	if r.reads != 2 || h.Due.Waiting != 2 {
		t.Fatalf("reads = %d, answer %d; want a fresh read", r.reads, h.Due.Waiting)
	}
}

func TestDueCacheKeepsNoError(t *testing.T) {
	var c dueCache
	boom := errors.New("store down")
	r := &histReader{cost: 50 * time.Millisecond, err: boom}
	if _, err := c.get(context.Background(), r.read); !errors.Is(err, boom) {
		t.Fatalf("err = %v; want the read's error", err)
	}
	r.err = nil
	h, err := c.get(context.Background(), r.read)
	if err != nil || r.reads != 2 || h.Due.Waiting != 2 {
		t.Fatalf("after a failed read: reads = %d, answer %d, err %v; want a fresh read", r.reads, h.Due.Waiting, err)
	}
}
