package budget_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/budget/budgetdriver"
	"github.com/hostguard/hostguard/internal/sqlitetest"
)

// One source with a 100-request daily limit at the normal share: an
// allowance of 10, head polls every 4h48m.
func smallSource() budget.Source {
	return budget.Source{Name: "idx", OwnerDailyLimit: budget.Int(100), Pace: budget.NoPace}
}

func TestHeadPollReserveKeepsGapPagesFromStarvingPolls(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{smallSource()}})
	f.clock.Set(time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC))
	if d, _ := f.b.PollInterval("idx"); d != 24*time.Hour/5 {
		t.Fatalf("poll interval %v; want 4h48m", d)
	}
	// At midnight all five polls of the day are still to come: 10 - 5 = 5
	// gap pages fit.
	n, err := admitN(t, f.b, budget.AdmitParams{Source: "idx", Kind: budget.KindGapPage}, 20)
	if n != 5 {
		t.Fatalf("admitted %d gap pages at midnight; want 5 (allowance 10 minus 5 reserved head polls)", n)
	}
	var ex *budget.ExhaustedError
	if !errors.As(err, &ex) || !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("refusal %v; want an *ExhaustedError", err)
	}
	wantReset := time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC)
	if ex.Allowance != budget.AllowanceSource || ex.Source != "idx" || ex.Kind != budget.KindGapPage ||
		ex.Used != 5 || ex.Limit != 5 || !ex.ResetAt.Equal(wantReset) || ex.Reported {
		t.Fatalf("refusal %+v; want source allowance, used 5 of 5, reset at %v", ex, wantReset)
	}
	// Searches share the same reserve.
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindSearch}); !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("search after the gap pages: %v; want exhausted", err)
	}
	// The head polls still have their five.
	n, err = admitN(t, f.b, budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}, 20)
	if n != 5 || !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("admitted %d head polls, then %v; want 5, then exhausted", n, err)
	}
	s := f.source(t, "idx")
	if s.Used != 10 || s.Remaining != 0 || !s.Exhausted || s.Allowance != 10 {
		t.Fatalf("report %+v; want 10 of 10 used", s)
	}
}

func TestReserveShrinksAsTheDayGoesOn(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{smallSource()}})
	// 21:36 UTC: one poll slot (of 4h48m) is left, so 9 gap pages fit.
	f.clock.Set(time.Date(2025, 3, 14, 21, 36, 0, 0, time.UTC))
	if got := f.source(t, "idx").HeadPollReserve; got != 1 {
		t.Fatalf("reserve %d at 21:36; want 1", got)
	}
	n, _ := admitN(t, f.b, budget.AdmitParams{Source: "idx", Kind: budget.KindGapPage}, 20)
	if n != 9 {
		t.Fatalf("admitted %d gap pages at 21:36; want 9", n)
	}
}

func TestMidnightStartsANewDay(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{smallSource()}})
	last := time.Date(2025, 3, 14, 23, 59, 59, 999999000, time.UTC)
	f.clock.Set(last)
	n, err := admitN(t, f.b, budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}, 20)
	if n != 10 || !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("admitted %d, then %v; want 10, then exhausted", n, err)
	}
	var ex *budget.ExhaustedError
	errors.As(err, &ex)
	f.clock.Advance(time.Microsecond)
	if !f.clock.Now().Equal(ex.ResetAt) {
		t.Fatalf("ResetAt %v; want the next midnight %v", ex.ResetAt, f.clock.Now())
	}
	g, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll})
	if err != nil {
		t.Fatalf("first admission of the new day: %v", err)
	}
	if want := time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC); !g.Day.Equal(want) {
		t.Fatalf("grant day %v; want %v", g.Day, want)
	}
	if s := f.source(t, "idx"); s.Used != 1 {
		t.Fatalf("new day's usage %d; want 1", s.Used)
	}
	// Yesterday's counters are untouched.
	cs, err := f.st.BudgetUsage(ctx(t), time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Scope == "idx" && c.Kind == budgetdriver.CounterSource && c.Used != 10 {
			t.Fatalf("yesterday's source counter %d; want 10", c.Used)
		}
	}
}

func TestPacing(t *testing.T) {
	t.Parallel()
	src := smallSource()
	src.Pace = 0 // default 3 s
	f := setup(t, budget.Config{Sources: []budget.Source{src}})
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	g, err := f.b.Admit(ctx(t), p)
	if err != nil || !g.At.Equal(noon) {
		t.Fatalf("first admission %+v, %v; want one at %v", g, err, noon)
	}
	steps := []struct {
		advance    time.Duration
		retryAfter time.Duration // 0: admitted
	}{
		{0, 3 * time.Second},
		{time.Second, 2 * time.Second},
		{2*time.Second - time.Microsecond, time.Microsecond},
		{time.Microsecond, 0},
		{0, 3 * time.Second},
	}
	for i, s := range steps {
		f.clock.Advance(s.advance)
		_, err := f.b.Admit(ctx(t), p)
		var pe *budget.PacedError
		switch {
		case s.retryAfter == 0 && err != nil:
			t.Fatalf("step %d: %v; want admitted", i, err)
		case s.retryAfter > 0 && (!errors.As(err, &pe) || !errors.Is(err, budget.ErrPaced)):
			t.Fatalf("step %d: %v; want a *PacedError", i, err)
		case s.retryAfter > 0 && (pe.RetryAfter != s.retryAfter || pe.Source != "idx"):
			t.Fatalf("step %d: retry after %v on %q; want %v on idx", i, pe.RetryAfter, pe.Source, s.retryAfter)
		}
	}
	// A paced refusal charges nothing.
	if s := f.source(t, "idx"); s.Used != 2 {
		t.Fatalf("used %d; want 2 (refusals are free)", s.Used)
	}
}

func TestAnyNegativePaceTurnsPacingOff(t *testing.T) {
	t.Parallel()
	src := smallSource()
	src.Pace = -time.Hour
	f := setup(t, budget.Config{Sources: []budget.Source{src}})
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	for i := range 3 {
		if _, err := f.b.Admit(ctx(t), p); err != nil {
			t.Fatalf("admission %d at one instant: %v; want no pacing", i, err)
		}
	}
	if got := f.b.Sources()[0].Pace; got != budget.NoPace {
		t.Fatalf("Sources reports pace %v; want NoPace", got)
	}
	if s := f.source(t, "idx"); s.Pace != 0 {
		t.Fatalf("report shows pace %v; want 0 (not paced)", s.Pace)
	}
}

func TestExhaustionComesBeforePacing(t *testing.T) {
	t.Parallel()
	src := smallSource()
	src.Pace = time.Hour
	src.OwnerDailyLimit = budget.Int(10) // allowance 1
	f := setup(t, budget.Config{Sources: []budget.Source{src}})
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	if _, err := f.b.Admit(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Admit(ctx(t), p); !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("%v; want exhausted (not paced: waiting would not help)", err)
	}
}

func TestForegroundIsRecordedButNeverRefused(t *testing.T) {
	t.Parallel()
	src := smallSource()
	src.Pace = 10 * time.Second
	f := setup(t, budget.Config{Sources: []budget.Source{src}})
	f.b.Pause(ctx(t), true)
	for range 15 { // more than the allowance of 10, while paused
		if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindForeground}); err != nil {
			t.Fatalf("foreground: %v", err)
		}
	}
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindForeground, Cost: 2}); err != nil {
		t.Fatalf("foreground without a source: %v", err)
	}
	s := f.source(t, "idx")
	if s.Used != 0 {
		t.Fatalf("source allowance used %d by foreground work; want 0", s.Used)
	}
	var fg int64
	for _, l := range s.Kinds {
		if l.Kind == budget.KindForeground {
			fg = l.Used
		}
	}
	if fg != 15 {
		t.Fatalf("source's foreground count %d; want 15", fg)
	}
	if l := f.kind(t, budget.KindForeground); l.Used != 17 || l.Limited {
		t.Fatalf("cluster foreground line %+v; want 17 used, not limited", l)
	}
	// Background work keeps its pace after foreground requests.
	f.b.Pause(ctx(t), false)
	f.clock.Advance(9 * time.Second)
	_, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll})
	var pe *budget.PacedError
	if !errors.As(err, &pe) || pe.RetryAfter != time.Second {
		t.Fatalf("background right after foreground: %v; want paced for 1s", err)
	}
}

func TestPause(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{smallSource()}, Paused: true})
	if !f.b.Paused() {
		t.Fatal("Config.Paused did not start paused")
	}
	for _, p := range []budget.AdmitParams{
		{Source: "idx", Kind: budget.KindHeadPoll},
		{Kind: budget.KindValidation},
		{Kind: budget.KindBytes, Cost: 10},
	} {
		if _, err := f.b.Admit(ctx(t), p); !errors.Is(err, budget.ErrPaused) {
			t.Fatalf("%+v while paused: %v; want ErrPaused", p, err)
		}
		if _, err := f.b.Wait(ctx(t), p); !errors.Is(err, budget.ErrPaused) {
			t.Fatalf("Wait %+v while paused: %v; want ErrPaused", p, err)
		}
	}
	f.b.Pause(ctx(t), false)
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}); err != nil {
		t.Fatalf("after resuming: %v", err)
	}
	if f.report(t).Paused != f.b.Paused() {
		t.Fatal("report disagrees about the pause")
	}
}

func TestConfigChangesApplyToTheNextAdmission(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{smallSource()}})
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	if n, _ := admitN(t, f.b, p, 3); n != 3 {
		t.Fatalf("admitted %d; want 3", n)
	}
	// Lower the limit below today's usage: the next admission is refused.
	src := smallSource()
	src.OwnerDailyLimit = budget.Int(30) // allowance 3
	if err := f.b.SetSource(ctx(t), src); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Admit(ctx(t), p); !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("after lowering the limit: %v; want exhausted", err)
	}
	// A gentler share of a higher limit: 5 % of 200 = 10.
	src.OwnerDailyLimit, src.Share = budget.Int(200), budget.ShareGentle
	if err := f.b.SetSource(ctx(t), src); err != nil {
		t.Fatal(err)
	}
	if s := f.source(t, "idx"); s.Allowance != 10 || s.Share != "gentle" || s.DailyLimit != 200 || s.LimitFrom != budget.LimitFromOwner {
		t.Fatalf("report %+v; want gentle 10 of owner's 200", s)
	}
	if _, err := f.b.Admit(ctx(t), p); err != nil {
		t.Fatalf("after raising the limit: %v", err)
	}
	// Removing the override of a configured source restores its base
	// settings; the base itself cannot be removed at run time.
	if err := f.b.RemoveSource(ctx(t), "idx"); err != nil {
		t.Fatal(err)
	}
	if s := f.source(t, "idx"); s.Allowance != 10 || s.Share != "normal" || s.DailyLimit != 100 {
		t.Fatalf("after removing the override: %+v; want the base's normal 10 of 100", s)
	}
	if err := f.b.RemoveSource(ctx(t), "idx"); !errors.Is(err, budget.ErrConfiguredSource) {
		t.Fatalf("removing a configured source without override: %v; want ErrConfiguredSource", err)
	}
	// A source that exists only as an override is gone once removed.
	extra := budget.AdmitParams{Source: "extra", Kind: budget.KindHeadPoll}
	if err := f.b.SetSource(ctx(t), budget.Source{Name: "extra", Pace: budget.NoPace}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Admit(ctx(t), extra); err != nil {
		t.Fatalf("a source added at run time: %v", err)
	}
	if err := f.b.RemoveSource(ctx(t), "extra"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Admit(ctx(t), extra); !errors.Is(err, budget.ErrUnknownSource) {
		t.Fatalf("after removing the source: %v; want ErrUnknownSource", err)
	}
	if err := f.b.RemoveSource(ctx(t), "extra"); !errors.Is(err, budget.ErrUnknownSource) {
		t.Fatalf("removing twice: %v; want ErrUnknownSource", err)
	}
}

func TestReportedLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{{Name: "a"}, {Name: "b", OwnerDailyLimit: budget.Int(50)}}})
	if err := f.b.ReportLimit(ctx(t), "a", 300); err != nil {
		t.Fatal(err)
	}
	if err := f.b.ReportLimit(ctx(t), "b", 300); err != nil {
		t.Fatal(err)
	}
	if s := f.source(t, "a"); s.Allowance != 30 || s.LimitFrom != budget.LimitFromReported {
		t.Fatalf("a: %+v; want 30 from the reported 300", s)
	}
	if s := f.source(t, "b"); s.Allowance != 5 || s.LimitFrom != budget.LimitFromOwner {
		t.Fatalf("b: %+v; want 5: the owner's 50 wins over the reported 300", s)
	}
	if err := f.b.ReportLimit(ctx(t), "a", 0); err != nil {
		t.Fatal(err)
	}
	if s := f.source(t, "a"); s.Allowance != 100 || s.LimitFrom != budget.LimitFromDefault {
		t.Fatalf("a after a zero report: %+v; want the default 1000 → 100", s)
	}
	if err := f.b.ReportLimit(ctx(t), "a", -1); err == nil {
		t.Fatal("negative reported limit accepted")
	}
	if err := f.b.ReportLimit(ctx(t), "nope", 10); !errors.Is(err, budget.ErrUnknownSource) {
		t.Fatalf("unknown source: %v", err)
	}
}

func TestMarkExhaustedLastsTheRestOfTheDay(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{smallSource(), {Name: "other", Pace: budget.NoPace}}})
	if err := f.b.MarkExhausted(ctx(t), "idx", time.Time{}); err != nil {
		t.Fatal(err)
	}
	_, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll})
	var ex *budget.ExhaustedError
	if !errors.As(err, &ex) || !ex.Reported || !strings.Contains(err.Error(), "reported") {
		t.Fatalf("after MarkExhausted: %v; want an exhausted error saying the source reported it", err)
	}
	if s := f.source(t, "idx"); !s.Exhausted || s.Remaining != 0 {
		t.Fatalf("report %+v; want exhausted", s)
	}
	// A second node sees it too.
	other, err := budget.New(f.st, budget.Config{Sources: []budget.Source{smallSource()}, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindSearch}); !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("other node: %v; want exhausted", err)
	}
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "other", Kind: budget.KindHeadPoll}); err != nil {
		t.Fatalf("another source is unaffected: %v", err)
	}
	f.clock.Set(time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC))
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}); err != nil {
		t.Fatalf("next day: %v", err)
	}
	if err := f.b.MarkExhausted(ctx(t), "nope", time.Time{}); !errors.Is(err, budget.ErrUnknownSource) {
		t.Fatalf("unknown source: %v", err)
	}
}

func TestMarkExhaustedUntilAnInstant(t *testing.T) {
	t.Parallel()
	src := smallSource()
	src.Pace = budget.NoPace
	f := setup(t, budget.Config{Sources: []budget.Source{src}})
	p := budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}
	back := noon.Add(10 * time.Minute)
	steps := []struct {
		at      time.Duration // from noon
		until   time.Time     // MarkExhausted's argument; zero: none this step
		resetAt time.Time     // zero: admitted
	}{
		{0, back, back},
		{5 * time.Minute, noon.Add(7 * time.Minute), back}, // a shorter mark does not shorten it
		{10*time.Minute - time.Microsecond, time.Time{}, back},
		{10 * time.Minute, time.Time{}, time.Time{}},
		// Beyond the day: the mark ends with the day's counters.
		{11 * time.Minute, noon.Add(48 * time.Hour), time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC)},
	}
	for i, s := range steps {
		f.clock.Set(noon.Add(s.at))
		if !s.until.IsZero() {
			if err := f.b.MarkExhausted(ctx(t), "idx", s.until); err != nil {
				t.Fatalf("step %d: MarkExhausted: %v", i, err)
			}
		}
		_, err := f.b.Admit(ctx(t), p)
		var ex *budget.ExhaustedError
		switch {
		case s.resetAt.IsZero() && err != nil:
			t.Fatalf("step %d: %v; want admitted", i, err)
		case !s.resetAt.IsZero() && (!errors.As(err, &ex) || !ex.Reported || !ex.ResetAt.Equal(s.resetAt)):
			t.Fatalf("step %d: %v; want exhausted as reported, resetting at %v", i, err, s.resetAt)
		}
		if r := f.source(t, "idx"); r.Exhausted != !s.resetAt.IsZero() || !r.ExhaustedUntil.Equal(s.resetAt) {
			t.Fatalf("step %d: report exhausted %v until %v; want until %v", i, r.Exhausted, r.ExhaustedUntil, s.resetAt)
		}
	}
	// A mark that would already be over is refused and changes nothing.
	for _, until := range []time.Time{f.clock.Now(), f.clock.Now().Add(-time.Hour)} {
		var ie *budget.InputError
		if err := f.b.MarkExhausted(ctx(t), "idx", until); !errors.As(err, &ie) || ie.Field != "until" {
			t.Errorf("MarkExhausted(until %v) = %v; want an InputError for until", until, err)
		}
	}
	var ie *budget.InputError
	if err := f.b.MarkExhausted(ctx(t), "a\x00", time.Time{}); !errors.As(err, &ie) || ie.Field != "source" {
		t.Errorf("MarkExhausted with a NUL in the source = %v; want an InputError for source", err)
	}
}

func TestTotalCapsAllSources(t *testing.T) {
	t.Parallel()
	a := budget.Source{Name: "a", Pace: budget.NoPace}
	b := budget.Source{Name: "b", Pace: budget.NoPace}
	f := setup(t, budget.Config{Sources: []budget.Source{a, b}})
	f.clock.Set(time.Date(2025, 3, 14, 23, 0, 0, 0, time.UTC)) // reserve: 2 polls per source
	// Without an owner's total, the total is the sum of allowances.
	if r := f.report(t); r.Total.Allowance != 200 {
		t.Fatalf("default total %d; want 200", r.Total.Allowance)
	}
	hp := func(s string) budget.AdmitParams { return budget.AdmitParams{Source: s, Kind: budget.KindHeadPoll} }
	if n, _ := admitN(t, f.b, hp("a"), 2); n != 2 {
		t.Fatal("setup admissions refused")
	}
	// A total set during the day counts the day's earlier work.
	if err := f.b.SetLimits(ctx(t), budget.Limits{Total: budget.Int(8)}); err != nil {
		t.Fatal(err)
	}
	// Gap pages may use 8 - 2 used - 4 reserved = 2.
	n, err := admitN(t, f.b, budget.AdmitParams{Source: "b", Kind: budget.KindGapPage}, 10)
	var ex *budget.ExhaustedError
	if n != 2 || !errors.As(err, &ex) || ex.Allowance != budget.AllowanceTotal {
		t.Fatalf("admitted %d gap pages, then %v; want 2, then the total exhausted", n, err)
	}
	// Head polls may use the rest.
	if n, err := admitN(t, f.b, hp("b"), 10); n != 4 || !errors.Is(err, budget.ErrExhausted) {
		t.Fatalf("admitted %d head polls, then %v; want 4, then exhausted", n, err)
	}
	r := f.report(t)
	if r.Total.Used != 8 || r.Total.Allowance != 8 || r.Total.Remaining != 0 {
		t.Fatalf("total line %+v; want 8 of 8", r.Total)
	}
	if err := f.b.SetLimits(ctx(t), budget.Limits{Total: budget.Int(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Admit(ctx(t), hp("a")); !errors.Is(err, budget.ErrDisabled) {
		t.Fatalf("zero total: %v; want ErrDisabled", err)
	}
}

func TestClusterWideKinds(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{
		Sources: []budget.Source{smallSource()},
		Limits:  budget.Limits{Candidate: budget.Int(2), Descriptor: budget.Int(0)},
	})
	if l := f.kind(t, budget.KindValidation); l.Allowance != budget.DefaultValidation {
		t.Fatalf("validation allowance %d; want the default %d", l.Allowance, budget.DefaultValidation)
	}
	c := budget.AdmitParams{Kind: budget.KindCandidate}
	n, err := admitN(t, f.b, c, 5)
	var ex *budget.ExhaustedError
	if n != 2 || !errors.As(err, &ex) || ex.Allowance != budget.AllowanceKind || ex.Kind != budget.KindCandidate {
		t.Fatalf("admitted %d candidate checks, then %v; want 2, then the kind exhausted", n, err)
	}
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Kind: budget.KindDescriptor}); !errors.Is(err, budget.ErrDisabled) {
		t.Fatalf("descriptor with a zero allowance: %v; want ErrDisabled", err)
	}
	// Naming a source records the work against it too, but the source's
	// own allowance does not pay.
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindValidation}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "elsewhere", Kind: budget.KindValidation}); err != nil {
		t.Fatalf("an unconfigured source is only recorded: %v", err)
	}
	s := f.source(t, "idx")
	if s.Used != 0 {
		t.Fatalf("source allowance used %d; want 0", s.Used)
	}
	if l := f.kind(t, budget.KindValidation); l.Used != 2 || l.Remaining != budget.DefaultValidation-2 {
		t.Fatalf("validation line %+v; want 2 used", l)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{smallSource()}})
	before := f.report(t)
	tests := []struct {
		p     budget.AdmitParams
		field string // "" for an error that is not an InputError
		want  string
	}{
		{budget.AdmitParams{Source: "idx", Kind: "poll"}, "kind", `unknown kind "poll"`},
		{budget.AdmitParams{Source: "idx"}, "kind", "unknown kind"},
		{budget.AdmitParams{Source: "idx", Kind: budget.KindSearch, Cost: -1}, "cost", "is -1"},
		{budget.AdmitParams{Source: "idx", Kind: budget.KindSearch, Cost: budget.MaxAmount + 1}, "cost", "up to 9007199254740992"},
		{budget.AdmitParams{Kind: budget.KindBytes}, "cost", "needs the bytes to reserve"},
		{budget.AdmitParams{Kind: budget.KindSearch}, "source", "needs a source"},
		{budget.AdmitParams{Source: "nope", Kind: budget.KindSearch}, "", "unknown source"},
		{budget.AdmitParams{Source: " idx", Kind: budget.KindValidation}, "source", "surrounding space"},
		{budget.AdmitParams{Source: "a\nb", Kind: budget.KindValidation}, "source", "control character"},
		{budget.AdmitParams{Source: "a\x00b", Kind: budget.KindValidation}, "source", "NUL byte"},
		{budget.AdmitParams{Source: "a\xffb", Kind: budget.KindValidation}, "source", "not valid UTF-8"},
		{budget.AdmitParams{Source: strings.Repeat("x", 300), Kind: budget.KindValidation}, "source", "longer than"},
	}
	for _, tt := range tests {
		_, err := f.b.Admit(ctx(t), tt.p)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "budget: ") {
			t.Errorf("Admit(%+v) = %v; want a budget: error containing %q", tt.p, err, tt.want)
		}
		var ie *budget.InputError
		if isInput := errors.As(err, &ie); isInput != (tt.field != "") || isInput && (ie.Field != tt.field || !errors.Is(err, budget.ErrInvalid)) {
			t.Errorf("Admit(%+v) = %#v; want an InputError for field %q matching ErrInvalid", tt.p, err, tt.field)
		}
	}
	after := f.report(t)
	if after.Sources[0].Used != before.Sources[0].Used || after.Kinds[0].Used != before.Kinds[0].Used {
		t.Fatal("bad input changed usage")
	}
	for _, l := range after.Kinds {
		if l.Used != 0 {
			t.Fatalf("bad input changed %s usage to %d", l.Kind, l.Used)
		}
	}
}

func TestConfigValidationNamesTheField(t *testing.T) {
	t.Parallel()
	st := sqlitetest.Open(t)
	tests := []struct {
		cfg   budget.Config
		field string
		want  string
	}{
		{budget.Config{HeadPollEvery: -time.Second}, "head_poll_every", "-1s"},
		{budget.Config{HeadPollEvery: 25 * time.Hour}, "head_poll_every", "25h"},
		{budget.Config{KeepDays: -1}, "keep_days", "-1"},
		{budget.Config{KeepDays: budget.MaxKeepDays + 1}, "keep_days", "3661"},
		{budget.Config{Limits: budget.Limits{Bytes: budget.Int(-1)}}, "bytes", "-1"},
		{budget.Config{Limits: budget.Limits{Total: budget.Int(budget.MaxAmount + 1)}}, "total", "9007199254740993"},
		{budget.Config{Sources: []budget.Source{{}}}, "sources[0].name", "is empty"},
		{budget.Config{Sources: []budget.Source{{Name: "a"}, {Name: "a"}}}, "sources[1].name", "listed twice"},
		{budget.Config{Sources: []budget.Source{{Name: "a", OwnerDailyLimit: budget.Int(-5)}}}, "sources[0].owner_daily_limit", "-5"},
		{budget.Config{Sources: []budget.Source{{Name: "a", ReportedDailyLimit: budget.Int(-5)}}}, "sources[0].reported_daily_limit", "-5"},
		{budget.Config{Sources: []budget.Source{{Name: "a", Share: 7}}}, "sources[0].share", "7"},
		{budget.Config{Sources: []budget.Source{{Name: "a", ReservePercent: budget.Int(101)}}}, "sources[0].reserve_percent", "101"},
		{budget.Config{Sources: []budget.Source{{Name: "ok"}, {Name: "a", Pace: 25 * time.Hour}}}, "sources[1].pace", "25h"},
	}
	for _, tt := range tests {
		_, err := budget.New(st, tt.cfg)
		var ie *budget.InputError
		if !errors.As(err, &ie) || ie.Field != tt.field || !strings.Contains(ie.Reason, tt.want) || !errors.Is(err, budget.ErrInvalid) {
			t.Errorf("New(%+v) = %v; want an InputError naming %q with %q", tt.cfg, err, tt.field, tt.want)
		}
		if vErr := tt.cfg.Validate(); vErr == nil || vErr.Error() != err.Error() {
			t.Errorf("Validate() = %v; want what New says, %v", vErr, err)
		}
	}
	if _, err := budget.New(nil, budget.Config{}); err == nil {
		t.Error("New(nil store) accepted")
	}
	b, err := budget.New(st, budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetSource(ctx(t), budget.Source{Name: "a", Pace: budget.MaxPace + 1}); err == nil {
		t.Error("SetSource accepted a bad pace")
	}
	var ie *budget.InputError
	if err := b.SetLimits(ctx(t), budget.Limits{Total: budget.Int(-1)}); !errors.As(err, &ie) || ie.Field != "total" {
		t.Errorf("SetLimits: %v; want an error naming total", err)
	}
	if len(b.Sources()) != 0 || b.Limits().Total != nil {
		t.Error("rejected changes were applied")
	}
}

func TestPauseSource(t *testing.T) {
	t.Parallel()
	other := budget.Source{Name: "other", OwnerDailyLimit: budget.Int(100), Pace: budget.NoPace}
	f := setup(t, budget.Config{Sources: []budget.Source{smallSource(), other}})
	if err := f.b.PauseSource(ctx(t), "idx", true); err != nil {
		t.Fatal(err)
	}
	for _, p := range []budget.AdmitParams{
		{Source: "idx", Kind: budget.KindHeadPoll},
		{Source: "idx", Kind: budget.KindSearch},
		{Source: "idx", Kind: budget.KindValidation},
	} {
		if _, err := f.b.Admit(ctx(t), p); !errors.Is(err, budget.ErrPaused) {
			t.Fatalf("%+v while its source is paused: %v; want ErrPaused", p, err)
		}
	}
	// The other sources, work naming no source and foreground work go on.
	for _, p := range []budget.AdmitParams{
		{Source: "other", Kind: budget.KindHeadPoll},
		{Kind: budget.KindValidation},
		{Source: "idx", Kind: budget.KindForeground},
	} {
		if _, err := f.b.Admit(ctx(t), p); err != nil {
			t.Fatalf("%+v while idx is paused: %v", p, err)
		}
	}
	if s := f.source(t, "idx"); !s.Paused || s.Used != 0 {
		t.Fatalf("idx in the report: %+v; want paused, nothing used", s)
	}
	if f.source(t, "other").Paused || f.report(t).Paused {
		t.Fatal("pausing idx shows another source, or all work, as paused")
	}
	// Replacing or resetting the source's settings keeps the pause.
	if err := f.b.SetSource(ctx(t), budget.Source{Name: "idx", OwnerDailyLimit: budget.Int(200), Pace: budget.NoPace}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.ResetSource(ctx(t), "idx"); err != nil {
		t.Fatal(err)
	}
	if !f.b.SourcePaused("idx") {
		t.Fatal("SetSource or ResetSource lifted the pause")
	}
	if err := f.b.PauseSource(ctx(t), "idx", false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "idx", Kind: budget.KindHeadPoll}); err != nil {
		t.Fatalf("after resuming idx: %v", err)
	}
	if err := f.b.PauseSource(ctx(t), "nope", true); !errors.Is(err, budget.ErrUnknownSource) {
		t.Fatalf("pausing an unknown source: %v; want ErrUnknownSource", err)
	}
	var ie *budget.InputError
	if err := f.b.PauseSource(ctx(t), " idx", true); !errors.As(err, &ie) || ie.Field != "name" {
		t.Fatalf("pausing a badly spelt name: %v; want an InputError for name", err)
	}
}

func TestPauseSourceGoesWithARemovedRunTimeSource(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{})
	src := budget.Source{Name: "rt", Pace: budget.NoPace}
	if err := f.b.SetSource(ctx(t), src); err != nil {
		t.Fatal(err)
	}
	if err := f.b.PauseSource(ctx(t), "rt", true); err != nil {
		t.Fatal(err)
	}
	if err := f.b.RemoveSource(ctx(t), "rt"); err != nil {
		t.Fatal(err)
	}
	if err := f.b.SetSource(ctx(t), src); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Admit(ctx(t), budget.AdmitParams{Source: "rt", Kind: budget.KindHeadPoll}); err != nil {
		t.Fatalf("a source added again after its removal: %v; want it unpaused", err)
	}
}
