package budget

import (
	"context"
	"time"

	"github.com/hostguard/hostguard/budget/budgetdriver"
)

// Report is today's usage against the allowances, as one node's
// configuration sees it. It maps one to one onto a JSON answer.
type Report struct {
	// Day is the UTC day reported; ResetAt is its end.
	Day     time.Time `json:"day"`
	ResetAt time.Time `json:"reset_at"`
	Paused  bool      `json:"paused"`
	// Total is all sources together (head polls, gap pages, searches).
	// Every figure of a Report is within 0..MaxAmount: sums stop there.
	Total Line `json:"total"`
	// Sources are the configured sources, by name.
	Sources []SourceReport `json:"sources"`
	// Kinds are the cluster-wide kinds: validation, candidate, descriptor,
	// bytes (used = reserved, settled to actual), and foreground (recorded,
	// never limited).
	Kinds []Line `json:"kinds"`
}

// Line is the usage of one allowance.
type Line struct {
	Kind Kind  `json:"kind"`
	Used int64 `json:"used"`
	// Limited is false for figures that are only recorded; then Allowance
	// and Remaining are 0.
	Limited   bool  `json:"limited"`
	Allowance int64 `json:"allowance"`
	Remaining int64 `json:"remaining"`
}

// SourceReport is one source's day.
type SourceReport struct {
	Name       string    `json:"name"`
	DailyLimit int64     `json:"daily_limit"`
	LimitFrom  LimitFrom `json:"limit_from"`
	Share      string    `json:"share"`
	// Paused is true while the source's background work is paused on its
	// own (Budget.PauseSource); Report.Paused pauses every source.
	Paused bool `json:"paused"`
	// Allowance, Used and Remaining are for everything the source's
	// allowance pays (head polls, gap pages, searches).
	Allowance int64 `json:"allowance"`
	Used      int64 `json:"used"`
	Remaining int64 `json:"remaining"`
	// HeadPollReserve is how many head polls the rest of the day keeps
	// back from gap pages and searches.
	HeadPollReserve int64 `json:"head_poll_reserve"`
	// Exhausted is true when the source said its own limit is reached
	// (MarkExhausted) or nothing remains.
	Exhausted bool `json:"exhausted"`
	// ExhaustedUntil is when the source's own report of its limit
	// (MarkExhausted) stops refusing; zero when it has not reported one.
	ExhaustedUntil time.Time `json:"exhausted_until,omitzero"`
	// PollInterval is how often to poll the head (0: not at all).
	PollInterval time.Duration `json:"poll_interval"`
	// Pace is the least time between two requests (0: not paced).
	Pace time.Duration `json:"pace"`
	// Kinds is the usage by kind of work, every kind that has any today
	// plus the three the allowance pays for.
	Kinds []Line `json:"kinds"`
}

// Report reads the current settings and today's counters from the store.
func (b *Budget) Report(ctx context.Context) (Report, error) {
	if _, err := b.refresh(ctx); err != nil {
		return Report{}, err
	}
	now := b.clock()
	today := utcDay(now)
	cs, err := b.st.BudgetUsage(ctx, today)
	if err != nil {
		return Report{}, err
	}
	snap := b.snap.Load()
	type key struct {
		scope string
		kind  Kind
	}
	used := make(map[key]budgetdriver.Counter, len(cs))
	var sumSources int64
	for _, c := range cs {
		// A figure out of range can only come from an older version's
		// writes; it must not make the report wrap.
		c.Used = min(max(c.Used, 0), MaxAmount)
		used[key{c.Scope, Kind(c.Kind)}] = c
		if Kind(c.Kind) == CounterSource {
			sumSources = addAmounts(sumSources, c.Used)
		}
	}
	rep := Report{Day: today, ResetAt: today.AddDate(0, 0, 1), Paused: snap.paused}

	var sumAllowance int64
	for _, name := range snap.names {
		r := snap.sources[name]
		agg := used[key{name, CounterSource}]
		sr := SourceReport{
			Name: name, DailyLimit: r.limit, LimitFrom: r.limitFrom, Share: r.Share.String(), Paused: r.paused,
			Allowance: r.allowance, Used: agg.Used, Remaining: max(r.allowance-agg.Used, 0),
			HeadPollReserve: headPollReserve(now, r.every),
			PollInterval:    r.every, Pace: r.pace,
		}
		if agg.ClosedUntil.After(now) {
			sr.Remaining = 0
			sr.ExhaustedUntil = agg.ClosedUntil.UTC()
		}
		sr.Exhausted = sr.Remaining == 0
		for _, k := range Kinds {
			c, ok := used[key{name, k}]
			if !ok && !k.FromSource() {
				continue
			}
			l := Line{Kind: k, Used: c.Used}
			if k.FromSource() {
				l.Limited, l.Allowance, l.Remaining = true, r.allowance, sr.Remaining
			}
			sr.Kinds = append(sr.Kinds, l)
		}
		sumAllowance = addAmounts(sumAllowance, r.allowance)
		rep.Sources = append(rep.Sources, sr)
	}

	rep.Total = Line{Kind: CounterTotal, Used: sumSources, Limited: true, Allowance: sumAllowance}
	if t := snap.cfg.Limits.Total; t != nil {
		rep.Total.Allowance = *t
		if c, ok := used[key{"", CounterTotal}]; ok {
			rep.Total.Used = c.Used
		}
	}
	rep.Total.Remaining = max(rep.Total.Allowance-rep.Total.Used, 0)

	for _, k := range Kinds {
		if k.FromSource() {
			continue
		}
		c := used[key{"", k}]
		l := Line{Kind: k, Used: c.Used}
		if k != KindForeground {
			l.Limited, l.Allowance = true, snap.kindLimit(k)
			l.Remaining = max(l.Allowance-l.Used, 0)
		}
		rep.Kinds = append(rep.Kinds, l)
	}
	return rep, nil
}

// addAmounts adds two amounts, stopping at MaxAmount: the sum of many
// sources' figures must not overflow into a negative total.
func addAmounts(a, b int64) int64 {
	return min(min(max(a, 0), MaxAmount)+min(max(b, 0), MaxAmount), MaxAmount)
}
