package budget

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hostguard/hostguard/budget/budgetdriver"
)

// AdmitParams says what a request is for.
type AdmitParams struct {
	// Source is the source the request goes to. Required for head polls,
	// gap pages and searches; optional for the other kinds, where a
	// configured source is also paced and an unconfigured name is only
	// recorded.
	Source string `json:"source,omitempty"`
	// Kind says which allowance pays. Required.
	Kind Kind `json:"kind"`
	// Cost is how much the request uses: requests (0 means 1), or for
	// KindBytes the bytes to reserve (required). At most MaxAmount.
	Cost int64 `json:"cost,omitempty"`
}

// validate checks what can be checked without the configuration.
func (p AdmitParams) validate() error {
	if !p.Kind.valid() {
		_, err := ParseKind(string(p.Kind))
		return err
	}
	if p.Kind == KindBytes && p.Cost == 0 {
		return invalid("cost", "is 0; a %s admission needs the bytes to reserve", KindBytes)
	}
	if err := checkAmount("cost", p.Cost, "0 (one request)"); err != nil {
		return err
	}
	if p.Source != "" {
		if err := checkName("source", p.Source); err != nil {
			return err
		}
	}
	return nil
}

// Grant is an admission. For KindBytes it is a reservation, with an ID, that
// must be settled (Settle) or released (Release) once the transfer is done;
// an unsettled reservation stays charged in full.
type Grant struct {
	// ID identifies a reservation (KindBytes only; "" otherwise). It is
	// durable: any node can settle it.
	ID     string `json:"id,omitempty"`
	Source string `json:"source,omitempty"`
	Kind   Kind   `json:"kind"`
	Cost   int64  `json:"cost"`
	// Day is the UTC day that was charged.
	Day time.Time `json:"day"`
	// At is when the request may start: now for Admit, the reserved slot
	// for Wait.
	At time.Time `json:"at"`
}

// Admit admits a request now or refuses it without blocking. Refusals:
// *ExhaustedError (errors.Is ErrExhausted) with the allowance and its reset
// time, *PacedError (ErrPaced) with how long until the source's next slot,
// or an error wrapping ErrPaused, ErrDisabled or ErrUnknownSource.
func (b *Budget) Admit(ctx context.Context, p AdmitParams) (Grant, error) {
	g, _, err := b.admit(ctx, p, b.clock(), 0)
	return g, err
}

// maxStale bounds how often one admission is planned again because the
// settings changed under it.
const maxStale = 5

// admit plans p under the current settings and sends it to the store,
// planning again when the store says the settings changed meanwhile. A
// refusal decided from the settings alone (paused, unknown source, zero
// allowance) is checked against the stored generation first, so that a
// node whose settings are stale never refuses for want of an admission
// reaching the store.
func (b *Budget) admit(ctx context.Context, p AdmitParams, now time.Time, maxWait time.Duration) (Grant, *plan, error) {
	if !b.snap.Load().loaded {
		if _, err := b.refresh(ctx); err != nil {
			return Grant{}, nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		pl, err := b.plan(p, now, maxWait)
		if err != nil {
			if errors.Is(err, ErrPaused) || errors.Is(err, ErrUnknownSource) || errors.Is(err, ErrDisabled) {
				changed, rerr := b.refresh(ctx)
				if rerr != nil {
					return Grant{}, nil, rerr
				}
				if changed && attempt < maxStale {
					continue
				}
			}
			return Grant{}, nil, err
		}
		g, stale, err := b.run(ctx, pl)
		if !stale {
			return g, pl, err
		}
		if attempt == maxStale {
			return Grant{}, nil, fmt.Errorf("budget: admit %s on %q: the settings keep changing", p.Kind, p.Source)
		}
		if _, err := b.refresh(ctx); err != nil {
			return Grant{}, nil, err
		}
	}
}

// Wait is Admit that waits for the source's pacing slot. It reserves the
// next free slot at once (so waiters are served in order, on every node) and
// sleeps until it. It never waits for an exhausted allowance: that error
// comes back at once. When ctx has a deadline that falls before the next
// free slot, Wait returns a *PacedError at once rather than sleep in vain.
//
// When ctx ends during the sleep, the admission is undone: its charges are
// refunded (the request was never made) and the slot is given back if no
// later slot has been taken since; if one has, the unused slot stays a gap,
// because moving later waiters forward would break the promise made to them
// and a gap can only make the source's traffic gentler.
func (b *Budget) Wait(ctx context.Context, p AdmitParams) (Grant, error) {
	maxWait := maxQueue
	if dl, ok := ctx.Deadline(); ok {
		maxWait = min(max(time.Until(dl), 0), maxQueue)
	}
	now := b.clock()
	g, pl, err := b.admit(ctx, p, now, maxWait)
	if err != nil {
		return g, err
	}
	d := g.At.Sub(now)
	if d <= 0 {
		return g, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return g, nil
	case <-ctx.Done():
	}
	// The caller is gone, but the undo must still reach the store.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	cerr := b.st.BudgetCancel(cctx, budgetdriver.CancelParams{
		Day: pl.params.Day, Charges: pl.params.Charges,
		PaceKey: pl.params.PaceKey, Pace: pl.params.Pace, Slot: g.At, GrantID: g.ID,
	})
	if cerr != nil {
		return Grant{}, fmt.Errorf("budget: wait for %s on %q: %w (and undoing the admission failed: %v)", p.Kind, p.Source, ctx.Err(), cerr)
	}
	return Grant{}, fmt.Errorf("budget: wait for %s on %q: %w", p.Kind, p.Source, ctx.Err())
}

// why is what a refusal by one charge means.
type why struct {
	allowance Allowance
	reserved  int64 // head polls kept back from the charge's limit
}

// maxQueue bounds how far ahead Wait reserves a slot when its context has
// no deadline; it only keeps the store's time arithmetic far from overflow.
const maxQueue = 7 * 24 * time.Hour

// plan is one admission, ready for the store.
type plan struct {
	params budgetdriver.AdmitParams
	// Why each charge may refuse, parallel to params.Charges.
	why   []why
	grant Grant
}

// plan turns a request into store charges under the current configuration:
//
//   - head polls, gap pages, searches: counters (source, kind) [record],
//     (source, CounterSource) [limit: allowance; for gap pages and searches
//     minus the head polls still reserved today], and, when the owner set a
//     total, ("", CounterTotal) [limit: total, minus every source's reserve
//     for gap pages and searches]; paced on the source.
//   - validation, candidate, descriptor, bytes: ("", kind) [limit: the
//     kind's allowance], plus (source, kind) [record] when a source is
//     named; paced when that source is configured.
//   - foreground: ("", foreground) and (source, foreground) [record];
//     never refused, not even while paused (all work or the source); it pushes the source's next
//     background slot to at least now + pace.
func (b *Budget) plan(p AdmitParams, now time.Time, maxWait time.Duration) (*plan, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Cost == 0 {
		p.Cost = 1
	}
	snap := b.snap.Load()
	today := utcDay(now)
	pl := &plan{
		params: budgetdriver.AdmitParams{Day: today, Now: now, MaxWait: maxWait, Settings: snap.gen},
		grant:  Grant{Source: p.Source, Kind: p.Kind, Cost: p.Cost, Day: today},
	}
	add := func(scope string, kind Kind, limited bool, limit int64, w why) {
		pl.params.Charges = append(pl.params.Charges, budgetdriver.Charge{Scope: scope, Kind: budgetdriver.Kind(kind), Cost: p.Cost, Limited: limited, Limit: max(limit, 0)})
		pl.why = append(pl.why, w)
	}
	src := snap.sources[p.Source] // nil when unnamed or unknown
	pace := func() {
		if src != nil && src.pace > 0 {
			pl.params.PaceKey, pl.params.Pace = src.Name, src.pace
		}
	}

	switch {
	case p.Kind == KindForeground:
		add("", p.Kind, false, 0, why{})
		if p.Source != "" {
			add(p.Source, p.Kind, false, 0, why{})
		}
		pace()
		pl.params.Touch = true

	case snap.paused:
		return nil, fmt.Errorf("%w (%s on %q refused)", ErrPaused, p.Kind, p.Source)

	case src != nil && src.paused:
		return nil, fmt.Errorf("%w: source %q is paused (%s refused)", ErrPaused, p.Source, p.Kind)

	case p.Kind.FromSource():
		if p.Source == "" {
			return nil, invalid("source", "is empty; a %s admission needs a source", p.Kind)
		}
		if src == nil {
			return nil, fmt.Errorf("%w %q", ErrUnknownSource, p.Source)
		}
		if src.allowance == 0 {
			return nil, fmt.Errorf("%w: source %q has a zero daily allowance", ErrDisabled, p.Source)
		}
		reserve := int64(0)
		if p.Kind != KindHeadPoll {
			reserve = headPollReserve(now, src.every)
		}
		add(p.Source, p.Kind, false, 0, why{})
		add(p.Source, CounterSource, true, src.allowance-reserve, why{AllowanceSource, reserve})
		if t := snap.cfg.Limits.Total; t != nil {
			if *t == 0 {
				return nil, fmt.Errorf("%w: the total allowance over all sources is zero", ErrDisabled)
			}
			all := int64(0)
			if p.Kind != KindHeadPoll {
				for _, r := range snap.sources {
					all += headPollReserve(now, r.every)
				}
			}
			add("", CounterTotal, true, *t-all, why{AllowanceTotal, all})
		}
		pace()

	default:
		limit := snap.kindLimit(p.Kind)
		if limit == 0 {
			return nil, fmt.Errorf("%w: the daily %s allowance is zero", ErrDisabled, p.Kind)
		}
		add("", p.Kind, true, limit, why{allowance: AllowanceKind})
		if p.Source != "" {
			add(p.Source, p.Kind, false, 0, why{})
		}
		pace()
		if p.Kind.reservation() {
			id, err := newGrantID()
			if err != nil {
				return nil, err
			}
			pl.grant.ID = id
			pl.params.Grant = &budgetdriver.Grant{ID: id, Day: today, Source: p.Source, Kind: budgetdriver.Kind(p.Kind), Cost: p.Cost, CreatedAt: now}
		}
	}
	sortCharges(pl)
	return pl, nil
}

// sortCharges orders the charges by (Scope, Kind) in byte order, the lock
// lock order of the stores, keeping why in step: BudgetCancel then touches the
// counters in the same order as every admission.
func sortCharges(pl *plan) {
	sort.Sort(byKey{pl})
}

type byKey struct{ pl *plan }

func (s byKey) Len() int { return len(s.pl.why) }
func (s byKey) Less(i, j int) bool {
	a, b := s.pl.params.Charges[i], s.pl.params.Charges[j]
	if a.Scope != b.Scope {
		return a.Scope < b.Scope
	}
	return a.Kind < b.Kind
}
func (s byKey) Swap(i, j int) {
	c := s.pl.params.Charges
	c[i], c[j] = c[j], c[i]
	s.pl.why[i], s.pl.why[j] = s.pl.why[j], s.pl.why[i]
}

func (s *snapshot) kindLimit(k Kind) int64 {
	l := s.cfg.Limits
	pick := func(v *int64, def int64) int64 {
		if v != nil {
			return *v
		}
		return def
	}
	switch k {
	case KindValidation:
		return pick(l.Validation, DefaultValidation)
	case KindCandidate:
		return pick(l.Candidate, DefaultCandidate)
	case KindDescriptor:
		return pick(l.Descriptor, DefaultDescriptor)
	case KindBytes:
		return pick(l.Bytes, DefaultBytes)
	}
	return 0
}

// run sends a plan to the store and turns its answer into a grant or a
// refusal, or reports that the plan's settings are stale.
func (b *Budget) run(ctx context.Context, pl *plan) (Grant, bool, error) {
	res, err := b.batch.admit(ctx, pl.params)
	if err != nil {
		return Grant{}, false, err
	}
	if res.Stale {
		return Grant{}, true, nil
	}
	if res.Admitted {
		g := pl.grant
		g.At = res.Slot
		return g, false, nil
	}
	if res.Refused < 0 || res.Refused >= len(pl.why) {
		return Grant{}, false, &PacedError{Source: pl.params.PaceKey, RetryAfter: max(res.Slot.Sub(pl.params.Now), 0)}
	}
	c, w := pl.params.Charges[res.Refused], pl.why[res.Refused]
	resetAt := pl.params.Day.AddDate(0, 0, 1)
	if res.Closed && !res.ClosedUntil.IsZero() && res.ClosedUntil.Before(resetAt) {
		resetAt = res.ClosedUntil.UTC()
	}
	return Grant{}, false, &ExhaustedError{
		Allowance: w.allowance,
		Reserved:  w.reserved,
		Source:    pl.grant.Source,
		Kind:      pl.grant.Kind,
		Limit:     c.Limit,
		Used:      res.Used,
		Reported:  res.Closed,
		ResetAt:   resetAt,
	}
}
