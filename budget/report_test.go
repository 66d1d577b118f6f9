package budget_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hostguard/hostguard/budget"
)

func TestReport(t *testing.T) {
	t.Parallel()
	f := setup(t, budget.Config{Sources: []budget.Source{
		{Name: "b", Share: budget.ShareGentle, Pace: 2 * time.Second},
		{Name: "a", ReportedDailyLimit: budget.Int(20)},
	}})
	for _, p := range []budget.AdmitParams{
		{Source: "b", Kind: budget.KindHeadPoll},
		{Source: "b", Kind: budget.KindValidation},
		{Kind: budget.KindBytes, Cost: 7},
	} {
		if _, err := f.b.Admit(ctx(t), p); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Second)
	}
	f.clock.Set(noon)
	r := f.report(t)
	wantDay := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	if !r.Day.Equal(wantDay) || !r.ResetAt.Equal(wantDay.AddDate(0, 0, 1)) || r.Paused {
		t.Fatalf("report header %v %v %v", r.Day, r.ResetAt, r.Paused)
	}
	if len(r.Sources) != 2 || r.Sources[0].Name != "a" || r.Sources[1].Name != "b" {
		t.Fatalf("sources %+v; want a, b in name order", r.Sources)
	}
	a, b := r.Sources[0], r.Sources[1]
	if a.Allowance != 2 || a.LimitFrom != budget.LimitFromReported || a.PollInterval != 24*time.Hour || a.Pace != budget.DefaultPace || a.HeadPollReserve != 1 {
		t.Fatalf("a: %+v", a)
	}
	if b.Allowance != 50 || b.Used != 1 || b.Remaining != 49 || b.Exhausted || b.PollInterval != 57*time.Minute+36*time.Second ||
		b.Pace != 2*time.Second || b.HeadPollReserve != 13 {
		t.Fatalf("b: %+v", b)
	}
	kinds := map[budget.Kind]budget.Line{}
	for _, l := range b.Kinds {
		kinds[l.Kind] = l
	}
	if kinds[budget.KindHeadPoll].Used != 1 || kinds[budget.KindGapPage].Used != 0 || kinds[budget.KindValidation].Used != 1 || kinds[budget.KindValidation].Limited {
		t.Fatalf("b's kinds %+v", b.Kinds)
	}
	if r.Total.Allowance != 52 || r.Total.Used != 1 || r.Total.Remaining != 51 {
		t.Fatalf("total %+v; want 1 of 52", r.Total)
	}
	for _, l := range r.Kinds {
		if l.Kind == budget.KindBytes && (l.Used != 7 || l.Allowance != budget.DefaultBytes) {
			t.Fatalf("bytes line %+v", l)
		}
	}
	// The report is the JSON answer as it stands.
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back budget.Report
	if err := json.Unmarshal(js, &back); err != nil || back.Sources[1].HeadPollReserve != 13 {
		t.Fatalf("JSON round trip: %v, %s", err, js)
	}
}
