package feed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// StopReason says why a sync ended.
type StopReason string

const (
	// StopCaughtUp: the sync reached the previous head and closed every
	// gap (or finished a first sync).
	StopCaughtUp StopReason = "caught-up"
	// StopMaxPages: Config.MaxPages pages were read; a gap remains.
	StopMaxPages StopReason = "max-pages"
	// StopTimeLimit: Config.SyncTimeout ran out after at least one page;
	// what was read is saved and a gap remains. (Running out before any
	// page came back is StopFailed.)
	StopTimeLimit StopReason = "time-limit"
	// StopNotAdmitted: the Admitter refused a page, or the source answered
	// that its own request limit is reached (ErrSourceExhausted); progress
	// up to that page is saved.
	StopNotAdmitted StopReason = "not-admitted"
	// StopFailed: a page (or its admission) failed; the stored position is
	// unchanged.
	StopFailed StopReason = "failed"
	// StopNoGap: Resume found no gap to read.
	StopNoGap StopReason = "no-gap"
)

// Result is what one Sync or Resume did.
type Result struct {
	// Items are the items not handed out before, newest first.
	Items []Item
	// Pages is how many page requests were made.
	Pages int
	// First is true for a feed's first sync.
	First bool
	// Stop says why the walk ended.
	Stop StopReason
	// Refusal is the reason when Stop is StopNotAdmitted: the Admitter's
	// refusal (with a budget, which allowance ran out and when it resets),
	// or the source's error matching ErrSourceExhausted.
	Refusal error
	// Gaps is how many unread stretches remain.
	Gaps int
	// Skipped counts, by reason (Item.Skip), the items the pages held that
	// the source could not identify: they are never handed out. Nil when
	// there were none.
	Skipped map[string]int
	// Forgotten is how many remembered ids the commit dropped, by
	// Config.SeenCap or Config.SeenFor.
	Forgotten int64
}

// Syncer syncs feeds incrementally. It is safe for concurrent use; syncs of
// one feed name are serialised within a Syncer, and across nodes the store's
// cursor version turns a concurrent sync into ErrConflict.
type Syncer struct {
	st  Store
	cfg Config

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// NewSyncer returns a Syncer over st.
func NewSyncer(st Store, cfg Config) (*Syncer, error) {
	if st == nil {
		return nil, &InputError{Field: "store", Reason: "is nil"}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Syncer{st: st, cfg: cfg.withDefaults(), locks: map[string]*sync.Mutex{}}, nil
}

func (s *Syncer) lock(name string) func() {
	s.mu.Lock()
	l := s.locks[name]
	if l == nil {
		l = &sync.Mutex{}
		s.locks[name] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Sync reads feed name from src's head down to the previous head, resuming
// stored gaps on the way, within Config.MaxPages requests and
// Config.SyncTimeout. The first page is admitted as a head poll, the rest
// as gap pages.
//
// A page that fails ends the sync with an error; Result.Items then holds
// what was read before it, and the stored position is unchanged. An
// Admitter's refusal, or a source's answer that its own limit is reached,
// ends it cleanly: nil error, Stop StopNotAdmitted, the pages read so far
// saved. The latter is also passed to the Admitter when it implements
// ExhaustionMarker, so that the rest of the day asks nothing more.
func (s *Syncer) Sync(ctx context.Context, name string, src Source) (Result, error) {
	return s.run(ctx, name, src, true)
}

// Resume reads only the stored gaps of feed name, without the head page,
// within Config.MaxPages requests (all admitted as gap pages). A feed with
// no gap costs no request. Items newer than the stored head wait for the
// next Sync.
func (s *Syncer) Resume(ctx context.Context, name string, src Source) (Result, error) {
	return s.run(ctx, name, src, false)
}

func (s *Syncer) run(ctx context.Context, name string, src Source, fromHead bool) (Result, error) {
	if err := checkName("name", name); err != nil {
		return Result{}, err
	}
	if src == nil {
		return Result{}, &InputError{Field: "source", Reason: "is nil"}
	}
	defer s.lock(name)()

	cur, _, err := s.st.FeedCursor(ctx, name)
	if err != nil {
		return Result{}, fmt.Errorf("feed: %s: read cursor: %w", name, err)
	}
	old, err := decodeState(cur.State)
	if err != nil {
		return Result{}, fmt.Errorf("%w (feed %s; reset it to start over)", err, name)
	}
	if !fromHead && len(old.Gaps) == 0 {
		return Result{Stop: StopNoGap}, nil
	}

	// The walk is bounded in time; the commit is not, so that what was
	// read is saved even when the bound cut the last page short.
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if s.cfg.SyncTimeout > 0 {
		wctx, cancel = context.WithTimeout(ctx, s.cfg.SyncTimeout)
	}
	defer cancel()
	w := &walker{
		ctx: wctx, parent: ctx, limit: s.cfg.SyncTimeout, name: name, src: src, admit: s.cfg.Admitter,
		maxPages: s.cfg.MaxPages, headNext: fromHead, driftOnce: !fromHead, taken: map[string]bool{},
	}
	res := Result{First: fromHead && old.Head == nil}
	if res.First {
		w.maxPages = 1 + s.cfg.CatchUp
	}
	next, complete := s.advance(w, old, fromHead)
	res.Pages, res.Stop, res.Refusal, res.Skipped = w.pages, w.stop, w.refusal, w.skipped
	if complete {
		res.Stop = StopCaughtUp
	}

	p := StoreCommitParams{
		Name: name, ExpectVersion: cur.Version, IDs: hashes(w.items),
		Now: s.cfg.Now().UTC(), SeenCap: max(s.cfg.SeenCap, 0),
	}
	if s.cfg.SeenFor > 0 {
		p.ForgetBefore = p.Now.Add(-s.cfg.SeenFor)
	}
	res.Gaps = len(old.Gaps)
	if w.err == nil {
		next.SyncedAt = p.Now
		if n := len(next.Gaps); n > s.cfg.MaxGaps {
			s.cfg.Logger.Warn("feed: too many unread stretches; giving up the oldest",
				"feed", name, "gaps", n, "kept", s.cfg.MaxGaps)
			next.Gaps = next.Gaps[:s.cfg.MaxGaps]
		}
		p.State = next.encode()
		res.Gaps = len(next.Gaps)
	}
	out, err := s.st.FeedCommit(ctx, p)
	if err != nil {
		// Nothing was recorded: the items will be read again.
		res.Gaps = len(old.Gaps)
		return res, fmt.Errorf("feed: %s: save: %w", name, err)
	}
	res.Items, res.Forgotten = pick(w.items, out.New), out.Forgotten
	if w.sourceExhausted {
		if m, ok := s.cfg.Admitter.(ExhaustionMarker); ok {
			// Best effort: the source will refuse again anyway.
			// Until the source said, if it did: a temporary refusal
			// ("retry in 10 minutes") must not close the rest of the
			// day; zero is the day's end, for a daily limit.
			_ = m.MarkExhausted(ctx, name, retryAt(w.refusal, s.cfg.Now()))
		}
	}
	return res, w.err
}

// advance walks the feed from the old position and returns the new one;
// complete is true when nothing is left unread.
func (s *Syncer) advance(w *walker, old state, fromHead bool) (next state, complete bool) {
	next = state{Head: old.Head}
	base := 0 // absolute offset of the top of the next gap's read stretch
	if fromHead {
		head := &segment{stop: old.Head}
		w.inHead = true
		closed := w.walk(head)
		w.inHead = false
		if w.newHead == nil && closed && old.Head != nil {
			// Nothing new above the old head but placeholders: it stays
			// the head, and the gaps below are resumed.
			h := *old.Head
			w.newHead = &h
		}
		if w.newHead == nil {
			// Nothing was read (failure, refusal) or the feed is empty.
			next.Gaps = old.Gaps
			return next, closed && len(old.Gaps) == 0 && w.err == nil && w.refusal == nil
		}
		next.Head = w.newHead
		if old.Head == nil {
			// A first sync starts at the head; older items (beyond
			// CatchUp) are deliberately never fetched, and a catch-up
			// cut short is not resumed.
			return next, w.refusal == nil
		}
		if !closed {
			next.Gaps = append([]gap{{After: *head.after, Span: head.afterAbs - w.topAbs, Before: *old.Head}}, old.Gaps...)
			return next, false
		}
		base = head.closedAt
	}
	for i, g := range old.Gaps {
		after := g.After
		seg := &segment{after: &after, stop: &g.Before, afterAbs: base + g.Span}
		if w.walk(seg) {
			base = seg.closedAt
			continue
		}
		left := gap{After: *seg.after, Span: seg.afterAbs - w.topAbs, Before: g.Before}
		if left.Span < 0 {
			left.Span = 0
		}
		next.Gaps = append([]gap{left}, old.Gaps[i+1:]...)
		return next, false
	}
	return next, true
}

// retryAt is when err's source says it will serve again (a RetryAter in
// its chain), or zero when it does not say or says a time not after now.
func retryAt(err error, now time.Time) time.Time {
	var ra RetryAter
	if err == nil || !errors.As(err, &ra) {
		return time.Time{}
	}
	if t := ra.RetryAt(); t.After(now) {
		return t
	}
	return time.Time{}
}

// hashes are the items' ids as the store keeps them.
func hashes(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = IDHash(it.ID)
	}
	return out
}

// pick returns the items whose id hashes are in fresh, in items' order.
func pick(items []Item, fresh []string) []Item {
	if len(fresh) == 0 {
		return nil
	}
	ok := make(map[string]bool, len(fresh))
	for _, id := range fresh {
		ok[id] = true
	}
	out := make([]Item, 0, len(fresh))
	for _, it := range items {
		if ok[IDHash(it.ID)] {
			out = append(out, it)
		}
	}
	return out
}
