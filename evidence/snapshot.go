package evidence

import (
	"context"
	"time"
)

// Snapshot is a computed set of per-subject summaries under one
// fingerprint. It is immutable and safe to share.
type Snapshot struct {
	known       bool
	at          time.Time
	gen         uint64
	fingerprint string
	subjects    map[string]Summary
}

// empty is what readers get before the first set exists.
var empty = &Snapshot{}

// Known reports whether the set was computed at all. Before the first
// refresh finishes, Known is false and every subject reads as Unknown.
func (s *Snapshot) Known() bool { return s.known }

// ComputedAt is the clock reading the set was computed at (zero if not
// Known).
func (s *Snapshot) ComputedAt() time.Time { return s.at }

// Fingerprint is the policy fingerprint the set was computed under.
func (s *Snapshot) Fingerprint() string { return s.fingerprint }

// Len is how many subjects hold a definitive verdict in the set.
func (s *Snapshot) Len() int { return len(s.subjects) }

// Summary returns subject's summary as of ComputedAt; subjects the set does
// not hold are Unknown.
func (s *Snapshot) Summary(subject string) Summary {
	if sum, ok := s.subjects[subject]; ok {
		return sum
	}
	return Summary{Subject: subject}
}

// Verdict is shorthand for Summary(subject).Verdict.
func (s *Snapshot) Verdict(subject string) Verdict { return s.subjects[subject].Verdict }

// Subjects calls fn for every subject whose summary is v (Available or
// Unavailable), in no particular order, until fn returns false.
func (s *Snapshot) Subjects(v Verdict, fn func(Summary) bool) {
	for _, sum := range s.subjects {
		if sum.Verdict == v && !fn(sum) {
			return
		}
	}
}

// Snapshot returns the last computed set without waiting. If the set is
// older than Config.MaxAge, or older than a change made through this Book,
// it starts one background refresh (unless one is already running) and
// still returns the old set. Before the first set exists it returns an
// empty set whose Known is false.
func (b *Book) Snapshot() *Snapshot {
	s := b.snap.Load()
	if s == nil || b.stale(s) {
		b.startRefresh()
	}
	if s == nil {
		return empty
	}
	return s
}

func (b *Book) stale(s *Snapshot) bool {
	return s.gen < b.gen.Load() || b.now().Sub(s.at) >= b.cfg.MaxAge
}

// startRefresh launches the background refresh unless one runs already
// (single flight), the Book is closed, or the last one failed too recently.
func (b *Book) startRefresh() {
	b.mu.Lock()
	if b.closed || b.refreshing || b.now().Before(b.retryAt) {
		b.mu.Unlock()
		return
	}
	b.refreshing = true
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(b.ctx, b.cfg.RefreshTimeout)
		defer cancel()
		err := b.refresh(ctx)
		b.mu.Lock()
		b.refreshing = false
		if err != nil {
			b.retryAt = b.now().Add(b.cfg.RefreshRetry)
		}
		b.mu.Unlock()
		if err != nil && b.ctx.Err() == nil {
			b.cfg.Logger.Warn("evidence: snapshot refresh failed; serving the previous set", "err", err)
		}
	}()
}

// Refresh computes a new set now and publishes it, waiting for the store.
// Most callers want Snapshot, which never waits.
func (b *Book) Refresh(ctx context.Context) error {
	if err := b.live(); err != nil {
		return err
	}
	return b.refresh(ctx)
}

func (b *Book) refresh(ctx context.Context) error {
	// Read the generation before the store: a change that lands while
	// the queries run (a policy switch this read finds included) leaves
	// the new set stale, so it is recomputed.
	gen := b.gen.Load()
	fp, err := b.current(ctx)
	if err != nil {
		return err
	}
	now := b.now()
	rows, err := b.st.EvidenceSummaries(ctx, StoreSummariesParams{
		Fingerprint:   fp,
		PositiveSince: now.Add(-b.cfg.TTL),
		NegativeSince: now.Add(-b.cfg.NegativeTTL),
	})
	if err != nil {
		return err
	}
	subjects := make(map[string]Summary, len(rows))
	for _, r := range rows {
		subjects[r.Subject] = summarize(r.Subject, r.Positive, r.Negative, r.CheckedAt)
	}
	next := &Snapshot{known: true, at: now, gen: gen, fingerprint: fp, subjects: subjects}
	for {
		cur := b.snap.Load()
		// Never replace a set with one computed from older information.
		if cur != nil && (cur.gen > gen || cur.at.After(now)) {
			return nil
		}
		if b.snap.CompareAndSwap(cur, next) {
			return nil
		}
	}
}
