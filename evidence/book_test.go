package evidence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/evidence"
	"github.com/hostguard/hostguard/internal/sqlitetest"
)

func TestPositiveExpiresAfterTTL(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := newBook(t, sqlitetest.Open(t), evidence.Config{Fingerprint: "p1", Now: clk.Now})
	if err := b.Record(ctx(t), evidence.Check{Source: "idx", Subject: "m1", Verdict: evidence.Available}); err != nil {
		t.Fatal(err)
	}
	checked := clk.Now()
	steps := []struct {
		advance time.Duration
		want    evidence.Verdict
		reason  evidence.Reason
	}{
		{0, evidence.Available, ""},
		{6*time.Hour - time.Microsecond, evidence.Available, ""},
		{time.Microsecond, evidence.Unknown, evidence.ReasonExpired},
		{time.Hour, evidence.Unknown, evidence.ReasonExpired},
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		r, err := b.Get(ctx(t), "idx", "m1")
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != s.want || r.Reason != s.reason || r.Stored != evidence.Available || !r.CheckedAt.Equal(checked) {
			t.Fatalf("step %d (+%v): %+v; want %v (%q)", i, clk.Now().Sub(checked), r, s.want, s.reason)
		}
		sum, _, err := b.Summarize(ctx(t), "m1")
		if err != nil || sum.Verdict != s.want {
			t.Fatalf("step %d: summary %+v, %v; want %v", i, sum, err, s.want)
		}
	}
}

func TestNegativeExpiresAfterNegativeTTL(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := newBook(t, sqlitetest.Open(t), evidence.Config{Now: clk.Now, NegativeTTL: time.Hour})
	if err := b.Record(ctx(t), evidence.Check{Source: "idx", Subject: "m1", Verdict: evidence.Unavailable}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour - time.Second)
	if r, _ := b.Get(ctx(t), "idx", "m1"); r.Verdict != evidence.Unavailable {
		t.Fatalf("before NegativeTTL: %v", r.Verdict)
	}
	clk.Advance(time.Second)
	if r, _ := b.Get(ctx(t), "idx", "m1"); r.Verdict != evidence.Unknown || r.Reason != evidence.ReasonExpired {
		t.Fatalf("at NegativeTTL: %v %q, want unknown/expired", r.Verdict, r.Reason)
	}
}

func TestOtherFingerprintDoesNotSeeVerdict(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	clk := newClock()
	p1 := newBook(t, st, evidence.Config{Fingerprint: evidence.Fingerprint("profile-a", "en"), Now: clk.Now})
	p2 := newBook(t, st, evidence.Config{Fingerprint: evidence.Fingerprint("profile-a", "de"), Now: clk.Now})
	if err := p1.Record(ctx(t), evidence.Check{Source: "idx", Subject: "m1", Verdict: evidence.Available}); err != nil {
		t.Fatal(err)
	}
	r, err := p2.Get(ctx(t), "idx", "m1")
	if err != nil || r.Verdict != evidence.Unknown || r.Reason != evidence.ReasonMissing {
		t.Fatalf("other fingerprint sees %+v, %v; want unknown/missing", r, err)
	}
	if r, _ := p1.Get(ctx(t), "idx", "m1"); r.Verdict != evidence.Available {
		t.Fatalf("own fingerprint sees %v", r.Verdict)
	}
}

func TestInvalidatePolicyDropsOldPositives(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	clk := newClock()
	b := newBook(t, st, evidence.Config{Fingerprint: "old", Now: clk.Now})
	for _, c := range []evidence.Check{
		{Source: "a", Subject: "m1", Verdict: evidence.Available},
		{Source: "a", Subject: "m2", Verdict: evidence.Unavailable},
		{Source: "b", Subject: "m1", Verdict: evidence.Unknown, Reason: evidence.ReasonTimeout},
	} {
		if err := b.Record(ctx(t), c); err != nil {
			t.Fatal(err)
		}
	}
	n, err := b.InvalidatePolicy(ctx(t), "new")
	if err != nil || n != 1 {
		t.Fatalf("InvalidatePolicy = %d, %v; want 1 positive dropped", n, err)
	}
	if b.CurrentFingerprint() != "new" {
		t.Fatalf("fingerprint = %q", b.CurrentFingerprint())
	}
	if r, _ := b.Get(ctx(t), "a", "m1"); r.Verdict != evidence.Unknown {
		t.Fatalf("after invalidation m1 = %v", r.Verdict)
	}
	// Under the old policy the positive is gone and the negative kept.
	// (A Book configured with the old fingerprint reads the stored policy,
	// so the table is looked at directly.)
	if _, ok, err := st.EvidenceGet(ctx(t), evidence.Key{Fingerprint: "old", Subject: "m1", Source: "a"}); ok || err != nil {
		t.Fatalf("old positive survived: ok=%v err=%v", ok, err)
	}
	if row, ok, err := st.EvidenceGet(ctx(t), evidence.Key{Fingerprint: "old", Subject: "m2", Source: "a"}); !ok || err != nil || row.Verdict != evidence.Unavailable {
		t.Fatalf("old negative = %+v (ok=%v, %v), want kept", row, ok, err)
	}
	// A node started later with the old fingerprint in its configuration
	// (a restart, another node) works under the stored policy.
	old := newBook(t, st, evidence.Config{Fingerprint: "old", Now: clk.Now})
	if r, _ := old.Get(ctx(t), "a", "m1"); r.Reason != evidence.ReasonMissing || r.Fingerprint != "new" || old.CurrentFingerprint() != "new" {
		t.Fatalf("restarted book: %+v, fingerprint %q; want the stored policy new", r, old.CurrentFingerprint())
	}
	// New verdicts under the new policy count.
	if err := b.Record(ctx(t), evidence.Check{Source: "a", Subject: "m1", Verdict: evidence.Available}); err != nil {
		t.Fatal(err)
	}
	if r, _ := b.Get(ctx(t), "a", "m1"); r.Verdict != evidence.Available || r.Fingerprint != "new" {
		t.Fatalf("new positive = %+v", r)
	}
}

// TestSummarize runs step tables: each case records checks (source, verdict,
// reason, age) and expects one summary.
func TestSummarize(t *testing.T) {
	t.Parallel()
	type rec struct {
		source  string
		verdict evidence.Verdict
		reason  evidence.Reason
		age     time.Duration
	}
	cases := []struct {
		name     string
		recs     []rec
		want     evidence.Verdict
		pos, neg int
	}{
		{"nothing recorded", nil, evidence.Unknown, 0, 0},
		{"one positive", []rec{{"a", evidence.Available, "", 0}}, evidence.Available, 1, 0},
		{"timeout is unknown, not negative", []rec{{"a", evidence.Unknown, evidence.ReasonTimeout, 0}}, evidence.Unknown, 0, 0},
		{"exhausted and unsupported are unknown", []rec{
			{"a", evidence.Unknown, evidence.ReasonExhausted, 0},
			{"b", evidence.Unknown, evidence.ReasonUnsupported, 0},
		}, evidence.Unknown, 0, 0},
		{"one source failing never hides a positive", []rec{
			{"a", evidence.Available, "", time.Hour},
			{"b", evidence.Unknown, evidence.ReasonError, 0},
			{"c", evidence.Unavailable, "", 0},
		}, evidence.Available, 1, 1},
		{"a real negative with a failure elsewhere", []rec{
			{"a", evidence.Unavailable, "", 0},
			{"b", evidence.Unknown, evidence.ReasonTimeout, 0},
		}, evidence.Unavailable, 0, 1},
		{"expired positive and a real negative", []rec{
			{"a", evidence.Available, "", 7 * time.Hour},
			{"b", evidence.Unavailable, "", time.Minute},
		}, evidence.Unavailable, 0, 1},
		{"only expired positives", []rec{{"a", evidence.Available, "", 6 * time.Hour}}, evidence.Unknown, 0, 0},
	}
	st := sqlitetest.Open(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			b := newBook(t, st, evidence.Config{Fingerprint: fmt.Sprint("case", i), Now: clk.Now})
			base := clk.Now()
			// Record oldest first, each at its own age.
			for _, r := range c.recs {
				clk.Set(base.Add(-r.age))
				if err := b.Record(ctx(t), evidence.Check{Source: r.source, Subject: "m", Verdict: r.verdict, Reason: r.reason}); err != nil {
					t.Fatal(err)
				}
			}
			clk.Set(base)
			sum, recs, err := b.Summarize(ctx(t), "m")
			if err != nil {
				t.Fatal(err)
			}
			if sum.Verdict != c.want || sum.Positive != c.pos || sum.Negative != c.neg {
				t.Fatalf("summary %+v; want %v with %d positive, %d negative", sum, c.want, c.pos, c.neg)
			}
			if len(recs) != len(c.recs) {
				t.Fatalf("%d records, want %d", len(recs), len(c.recs))
			}
			// The snapshot computes the same verdict in the store.
			if err := b.Refresh(ctx(t)); err != nil {
				t.Fatal(err)
			}
			if snap := b.Snapshot().Summary("m"); snap.Verdict != c.want || snap.Positive != c.pos || snap.Negative != c.neg {
				t.Fatalf("snapshot %+v; want %v with %d positive, %d negative", snap, c.want, c.pos, c.neg)
			}
		})
	}
}

func TestTimeoutKeepsEarlierVerdict(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := newBook(t, sqlitetest.Open(t), evidence.Config{Now: clk.Now})
	if err := b.Record(ctx(t), evidence.Check{Source: "a", Subject: "m", Verdict: evidence.Unavailable}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := b.Record(ctx(t), evidence.Check{Source: "a", Subject: "m", Verdict: evidence.Unknown, Reason: evidence.ReasonTimeout}); err != nil {
		t.Fatal(err)
	}
	if r, _ := b.Get(ctx(t), "a", "m"); r.Verdict != evidence.Unavailable {
		t.Fatalf("a timeout replaced the negative: %+v", r)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	b := newBook(t, st, evidence.Config{})
	long := strings.Repeat("x", 2000)
	cases := []struct {
		c     evidence.Check
		field string
		want  string
	}{
		{evidence.Check{Subject: "m", Verdict: evidence.Available}, "source", "is empty"},
		{evidence.Check{Source: "a", Verdict: evidence.Available}, "subject", "is empty"},
		{evidence.Check{Source: "a", Subject: long}, "subject", "is 2000 bytes"},
		{evidence.Check{Source: "a\x00", Subject: "m"}, "source", "NUL byte"},
		{evidence.Check{Source: "a", Subject: "m\xff"}, "subject", "not valid UTF-8"},
		{evidence.Check{Source: "a", Subject: "m\u0085"}, "subject", "control character U+0085"},
		{evidence.Check{Source: "a", Subject: "m", Verdict: 7}, "verdict", "7"},
		{evidence.Check{Source: "a", Subject: "m", Verdict: evidence.Unknown, Reason: "bored"}, "reason", `"bored"`},
		{evidence.Check{Source: "a", Subject: "m", Verdict: evidence.Unknown, Reason: evidence.ReasonExpired}, "reason", `"expired"`},
		{evidence.Check{Source: "a", Subject: "m", Verdict: evidence.Unavailable, Reason: evidence.ReasonTimeout}, "reason", "only Unknown carries a reason"},
	}
	for _, c := range cases {
		err := b.Record(ctx(t), c.c)
		var ie *evidence.InputError
		if err == nil || !strings.HasPrefix(err.Error(), "evidence: ") || !errors.As(err, &ie) || ie.Field != c.field ||
			!strings.Contains(ie.Reason, c.want) || !errors.Is(err, evidence.ErrInvalid) {
			t.Errorf("Record(%+v) = %v; want an InputError for %q mentioning %q", c.c, err, c.field, c.want)
		}
	}
	if n, err := st.EvidenceCount(ctx(t)); err != nil || n != 0 {
		t.Fatalf("bad input wrote %d rows (%v)", n, err)
	}
	if _, err := b.Get(ctx(t), "", "m"); err == nil {
		t.Error("Get with empty source: want an error")
	}
	if _, err := b.InvalidatePolicy(ctx(t), long); err == nil || b.CurrentFingerprint() != "" {
		t.Errorf("InvalidatePolicy(too long) = %v, fingerprint %q; want an error and no switch", err, b.CurrentFingerprint())
	}
	for field, cfg := range map[string]evidence.Config{
		"ttl": {TTL: -1}, "negative_ttl": {NegativeTTL: evidence.MaxDuration + 1}, "max_rows": {MaxRows: -5},
		"max_age": {MaxAge: -time.Second}, "fingerprint": {Fingerprint: long},
	} {
		var ie *evidence.InputError
		if _, err := evidence.New(st, cfg); !errors.As(err, &ie) || ie.Field != field || !strings.HasPrefix(err.Error(), "evidence: "+field+": ") {
			t.Errorf("New(%+v) = %v; want an error naming %s", cfg, err, field)
		}
		if err := cfg.Validate(); !errors.As(err, &ie) || ie.Field != field {
			t.Errorf("Validate(%+v) = %v; want an error naming %s", cfg, err, field)
		}
	}
	if _, err := evidence.New(nil, evidence.Config{}); err == nil {
		t.Error("New(nil store): want an error")
	}
}

func TestCapPrunesOldest(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	clk := newClock()
	b := newBook(t, st, evidence.Config{MaxRows: 5, Now: clk.Now})
	for i := range 20 {
		clk.Advance(time.Second)
		if err := b.Record(ctx(t), evidence.Check{Source: "a", Subject: fmt.Sprint("m", i), Verdict: evidence.Available}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := st.EvidenceCount(ctx(t)); n != 5 {
		t.Fatalf("count = %d, want the cap of 5", n)
	}
	for i := range 20 {
		r, _ := b.Get(ctx(t), "a", fmt.Sprint("m", i))
		if want := i >= 15; (r.Verdict == evidence.Available) != want {
			t.Errorf("m%d = %v, want kept=%v", i, r.Verdict, want)
		}
	}
	// A lower cap takes effect through Prune.
	small := newBook(t, st, evidence.Config{MaxRows: 2, Now: clk.Now})
	if n, err := small.Prune(ctx(t)); err != nil || n != 3 {
		t.Fatalf("Prune = %d, %v; want 3", n, err)
	}
	if n, err := small.Prune(ctx(t)); err != nil || n != 0 {
		t.Fatalf("second Prune = %d, %v; want 0", n, err)
	}
}

func TestPruneManyBatches(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	clk := newClock()
	big := newBook(t, st, evidence.Config{MaxRows: 5000, Now: clk.Now})
	for i := range 650 {
		clk.Advance(time.Millisecond)
		if err := big.Record(ctx(t), evidence.Check{Source: "a", Subject: fmt.Sprint("m", i), Verdict: evidence.Unavailable}); err != nil {
			t.Fatal(err)
		}
	}
	small := newBook(t, st, evidence.Config{MaxRows: 100, Now: clk.Now})
	if n, err := small.Prune(ctx(t)); err != nil || n != 550 {
		t.Fatalf("Prune = %d, %v; want 550 over two batches", n, err)
	}
	if n, _ := st.EvidenceCount(ctx(t)); n != 100 {
		t.Fatalf("count = %d, want 100", n)
	}
}

func TestClosedBook(t *testing.T) {
	t.Parallel()
	b, err := evidence.New(sqlitetest.Open(t), evidence.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := b.Record(ctx(t), evidence.Check{Source: "a", Subject: "m", Verdict: evidence.Available}); !errors.Is(err, evidence.ErrClosed) {
		t.Fatalf("Record after Close = %v", err)
	}
	if s := b.Snapshot(); s.Known() {
		t.Fatal("closed book produced a known snapshot")
	}
}

func TestFingerprintSeparatesParts(t *testing.T) {
	t.Parallel()
	a, b := evidence.Fingerprint("ab", "c"), evidence.Fingerprint("a", "bc")
	if a == b || a != evidence.Fingerprint("ab", "c") || len(a) != 24 {
		t.Fatalf("Fingerprint: %q vs %q", a, b)
	}
}
