package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/evidence"
)

func evidenceStore(t testing.TB, h *Harness) evidence.Store {
	t.Helper()
	st, ok := h.Open(t).(evidence.Store)
	if !ok {
		t.Fatalf("%s store does not implement evidence.Store", h.Engine)
	}
	return st
}

// evidenceT0 is a fixed clock reading with microsecond precision, which both
// engines store exactly.
var evidenceT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func evRow(fp, subject, source string, v evidence.Verdict, at time.Time) evidence.StoreRecordParams {
	p := evidence.StoreRecordParams{Row: evidence.Row{
		Key:     evidence.Key{Fingerprint: fp, Subject: subject, Source: source},
		Verdict: v, CheckedAt: at,
	}}
	if v == evidence.Unknown {
		p.Reason = evidence.ReasonTimeout
	}
	return p
}

func testEvidence(t *testing.T, newHarness NewFunc) {
	t.Run("record and get round trip", func(t *testing.T) {
		t.Parallel()
		st := evidenceStore(t, newHarness(t))
		at := evidenceT0.Add(1234567 * time.Microsecond)
		if err := st.EvidenceRecord(ctx(t), evRow("fp", "movie-1", "idx-a", evidence.Available, at)); err != nil {
			t.Fatal(err)
		}
		row, ok, err := st.EvidenceGet(ctx(t), evidence.Key{Fingerprint: "fp", Subject: "movie-1", Source: "idx-a"})
		if err != nil || !ok {
			t.Fatalf("get: ok=%v err=%v", ok, err)
		}
		if row.Verdict != evidence.Available || !row.CheckedAt.Equal(at) || row.CheckedAt.Location() != time.UTC {
			t.Fatalf("got %+v, want available checked at %v UTC", row, at)
		}
		if _, ok, err := st.EvidenceGet(ctx(t), evidence.Key{Fingerprint: "other", Subject: "movie-1", Source: "idx-a"}); ok || err != nil {
			t.Fatalf("a different fingerprint sees the row: ok=%v err=%v", ok, err)
		}
	})

	t.Run("newer checks replace, unknown never replaces a verdict", func(t *testing.T) {
		t.Parallel()
		st := evidenceStore(t, newHarness(t))
		k := evidence.Key{Fingerprint: "fp", Subject: "s", Source: "src"}
		steps := []struct {
			v    evidence.Verdict
			at   time.Duration
			want evidence.Verdict
			wat  time.Duration
		}{
			{evidence.Unknown, 0, evidence.Unknown, 0},
			{evidence.Unknown, 1 * time.Second, evidence.Unknown, 1 * time.Second}, // unknown refreshes unknown
			{evidence.Available, 2 * time.Second, evidence.Available, 2 * time.Second},
			{evidence.Unknown, 3 * time.Second, evidence.Available, 2 * time.Second},     // timeout keeps the positive
			{evidence.Unavailable, 1 * time.Second, evidence.Available, 2 * time.Second}, // an older check loses
			{evidence.Unavailable, 4 * time.Second, evidence.Unavailable, 4 * time.Second},
			{evidence.Unknown, 5 * time.Second, evidence.Unavailable, 4 * time.Second}, // nor does it erase a negative
			{evidence.Available, 6 * time.Second, evidence.Available, 6 * time.Second},
		}
		for i, s := range steps {
			if err := st.EvidenceRecord(ctx(t), evRow(k.Fingerprint, k.Subject, k.Source, s.v, evidenceT0.Add(s.at))); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			row, ok, err := st.EvidenceGet(ctx(t), k)
			if err != nil || !ok {
				t.Fatalf("step %d: ok=%v err=%v", i, ok, err)
			}
			if row.Verdict != s.want || !row.CheckedAt.Equal(evidenceT0.Add(s.wat)) {
				t.Fatalf("step %d (record %v at +%v): got %v at %v, want %v at +%v",
					i, s.v, s.at, row.Verdict, row.CheckedAt, s.want, s.wat)
			}
		}
		if n, err := st.EvidenceCount(ctx(t)); err != nil || n != 1 {
			t.Fatalf("count after updates of one key = %d, %v; want 1", n, err)
		}
	})

	t.Run("subject rows and summaries", func(t *testing.T) {
		t.Parallel()
		st := evidenceStore(t, newHarness(t))
		recs := []evidence.StoreRecordParams{
			evRow("fp", "a", "s2", evidence.Available, evidenceT0.Add(10*time.Second)),
			evRow("fp", "a", "s1", evidence.Unavailable, evidenceT0.Add(20*time.Second)),
			evRow("fp", "a", "s3", evidence.Available, evidenceT0.Add(-time.Hour)), // too old to count
			evRow("fp", "b", "s1", evidence.Unavailable, evidenceT0.Add(5*time.Second)),
			evRow("fp", "b", "s2", evidence.Unknown, evidenceT0.Add(30*time.Second)),
			evRow("fp", "c", "s1", evidence.Unknown, evidenceT0.Add(30*time.Second)),   // unknown only: left out
			evRow("fp", "d", "s1", evidence.Available, evidenceT0.Add(-2*time.Hour)),   // expired only: left out
			evRow("fp", "e", "s1", evidence.Available, evidenceT0.Add(-time.Minute)),   // exactly PositiveSince: expired
			evRow("other", "a", "s9", evidence.Available, evidenceT0.Add(time.Second)), // other policy
		}
		for _, r := range recs {
			if err := st.EvidenceRecord(ctx(t), r); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := st.EvidenceSubject(ctx(t), "fp", "a")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s=%v", r.Source, r.Verdict))
		}
		if fmt.Sprint(got) != "[s1=unavailable s2=available s3=available]" {
			t.Fatalf("subject rows = %v", got)
		}
		sums, err := st.EvidenceSummaries(ctx(t), evidence.StoreSummariesParams{
			Fingerprint:   "fp",
			PositiveSince: evidenceT0.Add(-time.Minute),
			NegativeSince: evidenceT0,
		})
		if err != nil {
			t.Fatal(err)
		}
		bySubject := map[string]evidence.SummaryRow{}
		for _, s := range sums {
			bySubject[s.Subject] = s
		}
		if len(bySubject) != 2 {
			t.Fatalf("summaries = %+v; want subjects a and b only", sums)
		}
		if a := bySubject["a"]; a.Positive != 1 || a.Negative != 1 || !a.CheckedAt.Equal(evidenceT0.Add(20*time.Second)) {
			t.Fatalf("a = %+v; want 1 positive, 1 negative, newest at +20s", a)
		}
		if b := bySubject["b"]; b.Positive != 0 || b.Negative != 1 || !b.CheckedAt.Equal(evidenceT0.Add(5*time.Second)) {
			t.Fatalf("b = %+v; want 1 negative at +5s", b)
		}
	})

	t.Run("invalidate drops positives of other fingerprints only", func(t *testing.T) {
		t.Parallel()
		st := evidenceStore(t, newHarness(t))
		for i, r := range []evidence.StoreRecordParams{
			evRow("old", "a", "s1", evidence.Available, evidenceT0),
			evRow("old", "b", "s1", evidence.Available, evidenceT0),
			evRow("old", "c", "s1", evidence.Unavailable, evidenceT0),
			evRow("old", "d", "s1", evidence.Unknown, evidenceT0),
			evRow("new", "a", "s1", evidence.Available, evidenceT0),
		} {
			if err := st.EvidenceRecord(ctx(t), r); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
		n, err := st.EvidenceInvalidate(ctx(t), "new")
		if err != nil || n != 2 {
			t.Fatalf("invalidate = %d, %v; want 2 deleted", n, err)
		}
		for _, c := range []struct {
			fp, subject string
			want        bool
		}{{"old", "a", false}, {"old", "b", false}, {"old", "c", true}, {"old", "d", true}, {"new", "a", true}} {
			_, ok, err := st.EvidenceGet(ctx(t), evidence.Key{Fingerprint: c.fp, Subject: c.subject, Source: "s1"})
			if err != nil || ok != c.want {
				t.Errorf("%s/%s present=%v (%v), want %v", c.fp, c.subject, ok, err, c.want)
			}
		}
		if c, err := st.EvidenceCount(ctx(t)); err != nil || c != 3 {
			t.Fatalf("count = %d, %v; want 3", c, err)
		}
	})

	t.Run("cap keeps the newest rows", func(t *testing.T) {
		t.Parallel()
		st := evidenceStore(t, newHarness(t))
		const maxRows = 10
		for i := range 30 {
			p := evRow("fp", fmt.Sprintf("s%02d", i), "src", evidence.Available, evidenceT0.Add(time.Duration(i)*time.Second))
			p.MaxRows, p.TrimBatch = maxRows, 4
			if err := st.EvidenceRecord(ctx(t), p); err != nil {
				t.Fatal(err)
			}
			n, err := st.EvidenceCount(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if want := min(i+1, maxRows); n != int64(want) {
				t.Fatalf("after %d records count = %d, want %d", i+1, n, want)
			}
		}
		for i := range 30 {
			_, ok, err := st.EvidenceGet(ctx(t), evidence.Key{Fingerprint: "fp", Subject: fmt.Sprintf("s%02d", i), Source: "src"})
			if err != nil {
				t.Fatal(err)
			}
			if want := i >= 30-maxRows; ok != want {
				t.Errorf("row %d present=%v, want %v", i, ok, want)
			}
		}
	})

	t.Run("prune deletes oldest in bounded batches", func(t *testing.T) {
		t.Parallel()
		st := evidenceStore(t, newHarness(t))
		for i := range 50 {
			// Insert out of time order: pruning must follow checked time, not insertion.
			at := evidenceT0.Add(time.Duration((i*17)%50) * time.Second)
			if err := st.EvidenceRecord(ctx(t), evRow("fp", fmt.Sprintf("s%02d", (i*17)%50), "src", evidence.Unavailable, at)); err != nil {
				t.Fatal(err)
			}
		}
		var batches []int64
		for range 20 {
			n, err := st.EvidencePrune(ctx(t), evidence.StorePruneParams{MaxRows: 20, Batch: 7})
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, n)
			if n == 0 {
				break
			}
		}
		if fmt.Sprint(batches) != "[7 7 7 7 2 0]" {
			t.Fatalf("batches = %v; want 30 rows removed 7 at a time", batches)
		}
		if n, err := st.EvidenceCount(ctx(t)); err != nil || n != 20 {
			t.Fatalf("count = %d, %v; want 20", n, err)
		}
		for i := range 50 {
			_, ok, _ := st.EvidenceGet(ctx(t), evidence.Key{Fingerprint: "fp", Subject: fmt.Sprintf("s%02d", i), Source: "src"})
			if want := i >= 30; ok != want {
				t.Errorf("s%02d present=%v, want %v", i, ok, want)
			}
		}
	})

	t.Run("durable across handles", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		a := evidenceStore(t, h)
		if err := a.EvidenceRecord(ctx(t), evRow("fp", "x", "s", evidence.Available, evidenceT0)); err != nil {
			t.Fatal(err)
		}
		b := evidenceStore(t, h)
		row, ok, err := b.EvidenceGet(ctx(t), evidence.Key{Fingerprint: "fp", Subject: "x", Source: "s"})
		if err != nil || !ok || row.Verdict != evidence.Available {
			t.Fatalf("second handle: %+v ok=%v err=%v", row, ok, err)
		}
	})

	t.Run("concurrent writers from several handles", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		stores := []evidence.Store{evidenceStore(t, h), evidenceStore(t, h), evidenceStore(t, h)}
		const perWriter, writers, maxRows = 40, 6, 50
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := stores[w%len(stores)]
				for i := range perWriter {
					// Every writer also hits one shared key, newest check last.
					shared := evRow("fp", "shared", "src", evidence.Available, evidenceT0.Add(time.Hour+time.Duration(i*writers+w)*time.Millisecond))
					if err := st.EvidenceRecord(ctx(t), shared); err != nil {
						errs <- err
						return
					}
					p := evRow("fp", fmt.Sprintf("w%d-%d", w, i), "src", evidence.Unavailable, evidenceT0.Add(time.Duration(i)*time.Second))
					p.MaxRows, p.TrimBatch = maxRows, 4
					if err := st.EvidenceRecord(ctx(t), p); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		row, ok, err := stores[0].EvidenceGet(ctx(t), evidence.Key{Fingerprint: "fp", Subject: "shared", Source: "src"})
		wantAt := evidenceT0.Add(time.Hour + time.Duration((perWriter-1)*writers+writers-1)*time.Millisecond)
		if err != nil || !ok || !row.CheckedAt.Equal(wantAt) {
			t.Fatalf("shared key = %+v ok=%v err=%v; want the newest check %v", row, ok, err, wantAt)
		}
		// Concurrent trims may leave a few rows over the cap, never under it.
		n, err := stores[1].EvidenceCount(ctx(t))
		if err != nil || n < maxRows || n > maxRows+writers {
			t.Fatalf("count = %d, %v; want %d..%d", n, err, maxRows, maxRows+writers)
		}
		if _, err := stores[2].EvidencePrune(ctx(t), evidence.StorePruneParams{MaxRows: maxRows, Batch: 100}); err != nil {
			t.Fatal(err)
		}
		if n, err := stores[2].EvidenceCount(ctx(t)); err != nil || n != maxRows {
			t.Fatalf("count after prune = %d, %v; want %d", n, err, maxRows)
		}
	})
}

// testEvidenceStrings sends every bad text as every string a Book takes and
// checks that each is refused with the same error on every engine and that
// no row is written and the policy does not change.
func testEvidenceStrings(t *testing.T, newHarness NewFunc) {
	t.Parallel()
	st := evidenceStore(t, newHarness(t))
	b, err := evidence.New(st, evidence.Config{Now: func() time.Time { return evidenceT0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, bad := range badTexts {
		calls := []struct {
			field string
			call  func() error
		}{
			{"source", func() error {
				return b.Record(ctx(t), evidence.Check{Source: bad.s, Subject: "m", Verdict: evidence.Available})
			}},
			{"subject", func() error {
				return b.Record(ctx(t), evidence.Check{Source: "a", Subject: bad.s, Verdict: evidence.Unavailable})
			}},
			{"source", func() error { _, err := b.Get(ctx(t), bad.s, "m"); return err }},
			{"subject", func() error { _, err := b.Get(ctx(t), "a", bad.s); return err }},
			{"subject", func() error { _, _, err := b.Summarize(ctx(t), bad.s); return err }},
			{"fingerprint", func() error { _, err := b.InvalidatePolicy(ctx(t), bad.s); return err }},
			{"fingerprint", func() error {
				_, err := evidence.New(st, evidence.Config{Fingerprint: bad.s})
				return err
			}},
		}
		for i, c := range calls {
			err := c.call()
			if want := "evidence: " + c.field + ": " + bad.reason; err == nil || err.Error() != want || !errors.Is(err, evidence.ErrInvalid) {
				t.Errorf("%s, call %d: %v; want %q matching ErrInvalid", bad.what, i, err, want)
			}
		}
	}
	if n, err := st.EvidenceCount(ctx(t)); err != nil || n != 0 {
		t.Errorf("refused calls wrote %d rows (%v)", n, err)
	}
	if fp := b.CurrentFingerprint(); fp != "" {
		t.Errorf("a refused policy switch made %q current", fp)
	}
}

// testEvidencePolicy checks that the evidence policy is one for the whole
// cluster: stored, read by every node's next call, kept across restarts,
// and a switch deletes the old positives once.
func testEvidencePolicy(t *testing.T, newHarness NewFunc) {
	t.Run("store contract", func(t *testing.T) {
		t.Parallel()
		st := evidenceStore(t, newHarness(t))
		if p, err := st.EvidencePolicy(ctx(t)); err != nil || p.Set || p.Fingerprint != "" {
			t.Fatalf("fresh store policy %+v, %v; want none set", p, err)
		}
		for _, r := range []evidence.StoreRecordParams{
			evRow("p1", "m", "a", evidence.Available, evidenceT0),
			evRow("p1", "m", "b", evidence.Unavailable, evidenceT0),
			evRow("p2", "m", "a", evidence.Available, evidenceT0),
		} {
			if err := st.EvidenceRecord(ctx(t), r); err != nil {
				t.Fatal(err)
			}
		}
		steps := []struct {
			fp      string
			changed bool
			deleted int64
		}{
			{"p2", true, 1},  // first policy: p1's positive goes
			{"p2", false, 0}, // the same again: nothing left to delete
			{"", true, 1},    // the unnamed policy is a policy too
		}
		for i, s := range steps {
			at := evidenceT0.Add(time.Duration(i+1) * time.Second)
			res, err := st.EvidenceSetPolicy(ctx(t), evidence.StoreSetPolicyParams{Fingerprint: s.fp, Now: at})
			if err != nil || res.Changed != s.changed || res.Deleted != s.deleted {
				t.Fatalf("step %d: set %q = %+v, %v; want changed %v, deleted %d", i, s.fp, res, err, s.changed, s.deleted)
			}
			p, err := st.EvidencePolicy(ctx(t))
			if err != nil || !p.Set || p.Fingerprint != s.fp {
				t.Fatalf("step %d: policy %+v, %v; want %q set", i, p, err, s.fp)
			}
			if s.changed && !p.UpdatedAt.Equal(at) {
				t.Fatalf("step %d: updated at %v; want %v", i, p.UpdatedAt, at)
			}
		}
		if n, err := st.EvidenceCount(ctx(t)); err != nil || n != 1 {
			t.Fatalf("%d rows left (%v); want only p1's negative", n, err)
		}
	})

	t.Run("one policy for every node, kept across restarts", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		now := func() time.Time { return evidenceT0 }
		book := func(st evidence.Store) *evidence.Book {
			t.Helper()
			b, err := evidence.New(st, evidence.Config{Fingerprint: "p1", Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}
		stA, stB := evidenceStore(t, h), evidenceStore(t, h)
		a, b := book(stA), book(stB)
		for _, src := range []string{"a", "b"} {
			if err := b.Record(ctx(t), evidence.Check{Source: src, Subject: "m", Verdict: evidence.Available}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Refresh(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if s := b.Snapshot(); s.Verdict("m") != evidence.Available || s.Fingerprint() != "p1" {
			t.Fatalf("node B before the switch: %v under %q", s.Verdict("m"), s.Fingerprint())
		}

		// Node A switches; node B's very next calls are under p2.
		n, err := a.InvalidatePolicy(ctx(t), "p2")
		if err != nil || n != 2 {
			t.Fatalf("switch on node A = %d, %v; want 2 positives deleted", n, err)
		}
		if r, err := b.Get(ctx(t), "a", "m"); err != nil || r.Fingerprint != "p2" || r.Reason != evidence.ReasonMissing {
			t.Fatalf("node B after the switch: %+v, %v; want nothing under p2", r, err)
		}
		if fp := b.CurrentFingerprint(); fp != "p2" {
			t.Fatalf("node B's fingerprint %q; want p2", fp)
		}
		if err := b.Record(ctx(t), evidence.Check{Source: "a", Subject: "m", Verdict: evidence.Available}); err != nil {
			t.Fatal(err)
		}
		if err := b.Refresh(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if s := b.Snapshot(); s.Verdict("m") != evidence.Available || s.Fingerprint() != "p2" || s.Summary("m").Positive != 1 {
			t.Fatalf("node B's snapshot: %+v under %q; want one positive under p2", s.Summary("m"), s.Fingerprint())
		}

		// The same switch on node B deletes nothing more: B's positive is
		// under p2 already.
		if n, err := b.InvalidatePolicy(ctx(t), "p2"); err != nil || n != 0 {
			t.Fatalf("the same switch on node B = %d, %v; want 0", n, err)
		}

		// A restarted node configured with p1 still works under p2.
		c := book(evidenceStore(t, h))
		r, err := c.Get(ctx(t), "a", "m")
		if err != nil || r.Verdict != evidence.Available || r.Fingerprint != "p2" || c.CurrentFingerprint() != "p2" {
			t.Fatalf("restarted node: %+v, %v, fingerprint %q; want B's positive under p2", r, err, c.CurrentFingerprint())
		}
	})
}
