package retry

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

var hashMismatch = ClassConfig{Ladder: Ladder{24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour}, Escalate: BySources}

// TestEscalationBySources is a step table over one record: each row is a
// failure with its source and the wait it must get.
func TestEscalationBySources(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(nopStore{}, Config{Jitter: -1, Classes: map[string]ClassConfig{"hash_mismatch": hashMismatch}})
	if err != nil {
		t.Fatal(err)
	}
	r := &retrydriver.Record{ID: "x"}
	steps := []struct {
		class, source string
		wait          time.Duration
	}{
		{"hash_mismatch", "tracker-a", 24 * time.Hour},
		{"hash_mismatch", "tracker-a", 24 * time.Hour}, // one source repeating itself
		{"hash_mismatch", "peer-b", 7 * 24 * time.Hour},
		{"hash_mismatch", "", 7 * 24 * time.Hour}, // an unnamed failure adds no source
		{"no_peers", "dht-c", 0},                  // another class: the default ladder, by failures
		{"hash_mismatch", "dht-c", 30 * 24 * time.Hour},
		{"hash_mismatch", "dht-d", 30 * 24 * time.Hour}, // three or more: the last step
	}
	now := t0
	for i, st := range steps {
		key := newTokens(1)[0]
		r.State, r.LeaseGen, r.LeaseKey = retrydriver.Leased, int64(i+1), key
		if _, err := s.applyOutcome(r, Outcome{Op: OpFail, Class: st.class, Source: st.source}, key, now); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want := st.wait
		if st.class == "no_peers" {
			want = s.delay("no_peers", r.Failures, 0) // Default ladder at failure 5
		}
		if got := r.NextAt.Sub(now); got != want {
			t.Fatalf("step %d (%s from %q): wait %v, want %v", i, st.class, st.source, got, want)
		}
		now = now.Add(time.Hour)
	}
	es, _ := decodeEvidence(r.Sources)
	if got := distinctSources(es, "hash_mismatch"); got != 4 {
		t.Fatalf("%d distinct hash_mismatch sources kept, want 4: %+v", got, es)
	}
	if it, err := itemFrom(r, nil); err != nil || len(it.Sources) != 5 || it.Sources[len(it.Sources)-1].Source != "dht-d" {
		t.Fatalf("item sources %+v, %v", it.Sources, err)
	}
}

// TestObserveBoostsOncePerSource is a step table of sightings on a waiting
// item: each row is a source and the priority that must follow.
func TestObserveBoostsOncePerSource(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(nopStore{}, Config{ObserveMaxPriority: 5})
	if err != nil {
		t.Fatal(err)
	}
	r := &retrydriver.Record{ID: "x", State: retrydriver.Scheduled, NextAt: t0.Add(24 * time.Hour)}
	steps := []struct {
		source   string
		priority int
	}{
		{"dht-1", 1},
		{"dht-1", 1}, // again: counted, pulled forward, not raised
		{"dht-1", 1},
		{"dht-2", 2},
		{"dht-3", 3},
		{"dht-2", 3},
	}
	for i, st := range steps {
		now := t0.Add(time.Duration(i) * time.Minute)
		if _, err := s.applyObserve(r, st.source, 1, now, now.Add(10*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if r.Priority != st.priority || r.Observations != i+1 || !r.LastSeen.Equal(now) || !r.NextAt.Equal(t0.Add(10*time.Minute)) {
			t.Fatalf("step %d (%s): %+v; want priority %d, next_at kept at the first pull", i, st.source, r, st.priority)
		}
	}
	// Many sources: the cap still holds.
	for i := range 20 {
		if _, err := s.applyObserve(r, fmt.Sprint("many-", i), 1, t0, t0); err != nil {
			t.Fatal(err)
		}
	}
	if r.Priority != 5 {
		t.Fatalf("priority %d after 23 sources, want the cap 5", r.Priority)
	}
	// An item just inserted for the sighting keeps the priority it was
	// added with, as the one-statement path does.
	n := &retrydriver.Record{ID: "n", State: retrydriver.Pending, NextAt: t0, Priority: 2, Inserted: true}
	if _, err := s.applyObserve(n, "dht-1", 1, t0, t0.Add(10*time.Minute)); err != nil || n.Priority != 2 || n.Observations != 1 {
		t.Fatalf("inserted item after its sighting: %+v, %v", n, err)
	}
	// Leased and done items only record the sighting.
	for _, st := range []retrydriver.State{retrydriver.Leased, retrydriver.Done} {
		l := &retrydriver.Record{ID: "l", State: st, NextAt: t0.Add(time.Hour)}
		if _, err := s.applyObserve(l, "dht-1", 1, t0, t0); err != nil || l.Priority != 0 || !l.NextAt.Equal(t0.Add(time.Hour)) || l.Observations != 1 {
			t.Fatalf("%v item after a sighting: %+v, %v", st, l, err)
		}
	}
}

func TestNoteEvidenceIsBounded(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var es []Evidence
	es = noteEvidence(es, Evidence{Source: "a", At: t0, Class: "hash_mismatch"})
	es = noteEvidence(es, Evidence{Source: "b", At: t0, Class: "hash_mismatch"})
	for i := range 20 {
		es = noteEvidence(es, Evidence{Source: fmt.Sprint("seen-", i), At: t0.Add(time.Duration(i) * time.Second)})
	}
	if len(es) != SourcesLen || distinctSources(es, "hash_mismatch") != 2 || es[len(es)-1].Source != "seen-19" {
		t.Fatalf("after 20 sightings: %+v; want %d entries, both failures kept, newest last", es, SourcesLen)
	}
	for i := range 10 {
		es = noteEvidence(es, Evidence{Source: fmt.Sprint("fail-", i), At: t0, Class: "hash_mismatch"})
	}
	if len(es) != SourcesLen || distinctSources(es, "hash_mismatch") != SourcesLen {
		t.Fatalf("after 10 failing sources: %+v", es)
	}
	again := noteEvidence(es, Evidence{Source: "fail-9", At: t0.Add(time.Hour), Class: "hash_mismatch"})
	if len(again) != SourcesLen || !again[len(again)-1].At.Equal(t0.Add(time.Hour)) || reflect.DeepEqual(again, es) {
		t.Fatalf("a repeat must move the entry to the end with its new time: %+v", again)
	}
}

func FuzzDecodeEvidence(f *testing.F) {
	f.Add([]byte(`[[1700000000000,"dht"],[1700000001000,"tracker","hash_mismatch"]]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[[1,2]]`))
	f.Add([]byte(`[[1,"a","b","c"]]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := decodeEvidence(b)
		if err != nil {
			return
		}
		again, err := decodeEvidence(encodeEvidence(es))
		if err != nil {
			t.Fatalf("re-decode of %q: %v", b, err)
		}
		if len(es) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(es, again) {
			t.Fatalf("round trip of %q: %+v became %+v", b, es, again)
		}
	})
}
