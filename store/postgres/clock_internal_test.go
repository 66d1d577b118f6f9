package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/clocktest"
)

// When the database cannot be read, the last anchor goes on serving, and
// the clock asks again at most once per anchorRetry, not on every call.
func TestClusterClockOutlivesAnUnreadableDatabase(t *testing.T) {
	db := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	local := clocktest.New(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	reads, fail := 0, false
	c := &clusterClock{local: local.Now, every: anchorEvery, read: func(context.Context) (time.Time, error) {
		reads++
		if fail {
			return time.Time{}, errors.New("down")
		}
		return db, nil
	}}
	if err := c.anchor(context.Background()); err != nil {
		t.Fatal(err)
	}
	local.Advance(time.Second)
	if got := c.now(); !got.Equal(db.Add(time.Second)) || reads != 1 {
		t.Fatalf("now %v after %d reads; want %v after 1", got, reads, db.Add(time.Second))
	}
	fail = true
	local.Advance(anchorEvery) // stale: the next call anchors again, and fails
	want := db.Add(time.Second + anchorEvery)
	for range 3 {
		if got := c.now(); !got.Equal(want) {
			t.Fatalf("now %v with the database down; want the last anchor's %v", got, want)
		}
	}
	if reads != 2 {
		t.Fatalf("%d reads of the database's clock; want 2 (one failed retry, then a pause)", reads)
	}
	// A clock that jumps back is caught by the next call, which anchors
	// again once the database answers.
	fail = false
	c.retryAt = time.Time{}
	local.Advance(-time.Hour)
	db = db.Add(20 * time.Second)
	if got := c.now(); !got.Equal(db) || reads != 3 {
		t.Fatalf("now %v after %d reads; want the fresh anchor %v after 3", got, reads, db)
	}
}

// While one call reads the database's clock, the others read the old
// anchor instead of queueing behind a database that may be slow to
// answer.
func TestClusterClockDoesNotQueueBehindAnAnchor(t *testing.T) {
	db := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	local := clocktest.New(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	entered, release := make(chan struct{}), make(chan struct{})
	first := true
	c := &clusterClock{local: local.Now, every: anchorEvery, read: func(context.Context) (time.Time, error) {
		if first {
			first = false
			return db, nil
		}
		close(entered)
		<-release
		return db.Add(time.Hour), nil
	}}
	if err := c.anchor(context.Background()); err != nil {
		t.Fatal(err)
	}
	local.Advance(anchorEvery)
	anchored := make(chan time.Time)
	go func() { anchored <- c.now() }()
	<-entered
	if got, want := c.now(), db.Add(anchorEvery); !got.Equal(want) {
		t.Fatalf("beside an anchor in flight: %v; want the old anchor's %v", got, want)
	}
	close(release)
	if got := <-anchored; !got.Equal(db.Add(time.Hour)) {
		t.Fatalf("the anchoring call read %v; want the new anchor %v", got, db.Add(time.Hour))
	}
}
