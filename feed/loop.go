package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hostguard/hostguard/budget"
)

// Elector runs work only while this node leads its cluster;
// *leader.Elector implements it.
type Elector interface {
	Run(ctx context.Context, fn func(ctx context.Context) error) error
}

// Intervals says how often a source's head should be polled;
// *budget.Budget implements it.
type Intervals interface {
	PollInterval(source string) (time.Duration, error)
}

// LoopFeed is one feed a Loop polls.
type LoopFeed struct {
	// Name names the feed in the store and is the budget source name.
	Name string
	// Source serves the feed's pages.
	Source Source
}

// LoopConfig configures a Loop.
type LoopConfig struct {
	// Syncer syncs the feeds. Required.
	Syncer *Syncer
	// Feeds are the feeds to poll; names must be unique. Required.
	Feeds []LoopFeed
	// Elector, when set, makes the loop run only while this node leads.
	// Default (nil): the loop always runs (a single node).
	Elector Elector
	// Intervals gives each feed's head-poll interval, read after every
	// poll so that budget changes apply. Default (nil), or when it fails
	// or says 0 (no allowance; the budget then refuses the polls):
	// PollEvery.
	Intervals Intervals
	// PollEvery is the head-poll interval without Intervals. Default
	// (zero) 30 min.
	PollEvery time.Duration
	// GapEvery is how soon an open gap is resumed (without a head poll)
	// after a sync that left it, and the first delay after a failure.
	// Default (zero) 1 min.
	GapEvery time.Duration
	// RefusedRetry bounds how long a refused gap waits before it asks for
	// admission again (it asks no later than the budget's reset). Default
	// (zero) 15 min.
	RefusedRetry time.Duration
	// OnItems receives every sync's new items, newest first, from the
	// loop's goroutine; it should hand them off rather than block. Default
	// (nil): items are only counted.
	OnItems func(ctx context.Context, feed string, items []Item)
	// Now is the clock. Default (nil) time.Now. The loop's timers run on
	// real time, so a clock of one's own only makes sense in tests under
	// testing/synctest, where both are fake.
	Now func() time.Time
	// Logger receives one line per failed sync, one per sync whose pages
	// held items the source could not identify, and one per change of
	// leadership seen by the loop. Default (nil) slog.Default().
	Logger *slog.Logger
}

// Defaults for the zero fields of LoopConfig.
const (
	DefaultPollEvery    = 30 * time.Minute
	DefaultGapEvery     = time.Minute
	DefaultRefusedRetry = 15 * time.Minute
)

// Validate reports the first bad field as an *InputError; NewLoop refuses
// what it refuses.
func (c LoopConfig) Validate() error {
	if c.Syncer == nil {
		return &InputError{Field: "syncer", Reason: "is nil"}
	}
	if len(c.Feeds) == 0 {
		return &InputError{Field: "feeds", Reason: "is empty"}
	}
	seen := map[string]bool{}
	for i, f := range c.Feeds {
		field := fmt.Sprintf("feeds[%d]", i)
		if err := checkName(field+".name", f.Name); err != nil {
			return err
		}
		if seen[f.Name] {
			return &InputError{Field: field + ".name", Reason: fmt.Sprintf("%q is used twice", f.Name)}
		}
		seen[f.Name] = true
		if f.Source == nil {
			return &InputError{Field: field + ".source", Reason: "is nil"}
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"poll_every", c.PollEvery}, {"gap_every", c.GapEvery}, {"refused_retry", c.RefusedRetry}} {
		if d.v < 0 {
			return &InputError{Field: d.name, Reason: fmt.Sprintf("is %v; want 0 (the default) or more", d.v)}
		}
	}
	return nil
}

// FeedStatus is what a Loop knows about one feed.
type FeedStatus struct {
	Name string `json:"name"`
	// Leading is whether this node runs the loop now; the other fields
	// are as of the last sync this node ran.
	Leading bool `json:"leading"`
	// LastSync is when the last sync (or resume) ended; zero if none ran
	// on this node yet.
	LastSync time.Time `json:"last_sync"`
	// LastHeadPoll is when the head was last read.
	LastHeadPoll time.Time `json:"last_head_poll"`
	// LastItems, LastPages and LastStop describe the last sync.
	LastItems int        `json:"last_items"`
	LastPages int        `json:"last_pages"`
	LastStop  StopReason `json:"last_stop,omitempty"`
	// LastError is the last sync's error or refusal, "" if it had none.
	LastError string `json:"last_error,omitempty"`
	// LastSuccess is when a sync last ended with neither an error nor a
	// refusal; zero if none did on this node yet. Failures counts the
	// syncs that ended with an error since the loop started (a refusal,
	// the source saying "later", is not one). Together they let an
	// operator alert on a feed that stopped working, which LastSync,
	// moving on failures too, cannot.
	LastSuccess time.Time `json:"last_success,omitzero"`
	Failures    int64     `json:"failures"`
	// RetryAt is when the source said, with the last sync's refusal or
	// failure, that it will serve again (a Retry-After, "disabled till");
	// the loop asks it nothing before then. Zero when it did not say.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// LastSkipped is how many items the last sync's pages held that the
	// source could not identify; Skipped adds them up since the loop
	// started (see Result.Skipped).
	LastSkipped int   `json:"last_skipped"`
	Skipped     int64 `json:"skipped"`
	// Forgotten counts the remembered ids this node's syncs dropped since
	// the loop started, by Config.SeenCap or by age (Config.SeenFor): the
	// feed's retention at work (see Result.Forgotten).
	Forgotten int64 `json:"forgotten"`
	// Items counts the items this node's loop handed out since it
	// started.
	Items int64 `json:"items"`
	// Gaps is how many unread stretches the feed has.
	Gaps int `json:"gaps"`
	// Interval is the head-poll interval in use.
	Interval time.Duration `json:"interval"`
	// NextHeadPoll and NextResume are when the loop will next read the
	// head and resume a gap (zero: no gap).
	NextHeadPoll time.Time `json:"next_head_poll"`
	NextResume   time.Time `json:"next_resume"`
}

// Loop polls feeds on the cluster's leader: each feed's head at its poll
// interval, open gaps every GapEvery in between, all in one goroutine, one
// sync at a time. Create it with NewLoop and start it with Run; Status is
// safe to call from any goroutine.
type Loop struct {
	cfg LoopConfig

	mu      sync.Mutex
	leading bool
	feeds   map[string]*loopFeed
	order   []string
}

type loopFeed struct {
	src      Source
	status   FeedStatus
	failures int
}

// NewLoop checks cfg (an *InputError names the bad field) and returns a
// Loop.
func NewLoop(cfg LoopConfig) (*Loop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PollEvery == 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.GapEvery == 0 {
		cfg.GapEvery = DefaultGapEvery
	}
	if cfg.RefusedRetry == 0 {
		cfg.RefusedRetry = DefaultRefusedRetry
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := &Loop{cfg: cfg, feeds: map[string]*loopFeed{}}
	for _, f := range cfg.Feeds {
		l.feeds[f.Name] = &loopFeed{src: f.Source, status: FeedStatus{Name: f.Name}}
		l.order = append(l.order, f.Name)
	}
	return l, nil
}

// Status returns every feed's status, in configuration order.
func (l *Loop) Status() []FeedStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]FeedStatus, 0, len(l.order))
	for _, name := range l.order {
		st := l.feeds[name].status
		st.Leading = l.leading
		out = append(out, st)
	}
	return out
}

// RunLeading polls until ctx ends, as the leader: for a program whose own
// leader.Elector.Run function starts several leader-only loops (an Elector
// runs one function at a time). Cancel ctx when leadership ends. It returns
// ctx's error.
func (l *Loop) RunLeading(ctx context.Context) error { return l.lead(ctx) }

// Run runs the loop until ctx ends: through the Elector, polling only
// while this node leads, or directly without one. It returns nil when ctx
// ends.
func (l *Loop) Run(ctx context.Context) error {
	if l.cfg.Elector == nil {
		err := l.lead(ctx)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return l.cfg.Elector.Run(ctx, l.lead)
}

// lead polls while ctx lasts (while this node leads).
func (l *Loop) lead(ctx context.Context) error {
	l.setLeading(true)
	defer l.setLeading(false)
	// Start from the stored positions, so that a new leader does not poll
	// a feed its predecessor polled a minute ago.
	stored := map[string]Status{}
	if all, err := l.cfg.Syncer.Statuses(ctx); err == nil {
		for _, st := range all {
			stored[st.Name] = st
		}
	} else if ctx.Err() == nil {
		l.cfg.Logger.Warn("feed: loop could not read stored positions; polling every feed now", "err", err)
	}
	now := l.cfg.Now()
	l.mu.Lock()
	for _, name := range l.order {
		f := l.feeds[name]
		f.status.NextHeadPoll, f.status.NextResume = now, time.Time{}
		if st, ok := stored[name]; ok && st.Synced {
			f.status.Gaps = st.Gaps
			if !st.SyncedAt.IsZero() {
				f.status.NextHeadPoll = st.SyncedAt.Add(l.interval(name))
			}
			if st.Gaps > 0 {
				f.status.NextResume = now
			}
		}
	}
	l.mu.Unlock()

	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		name, at, head := l.next()
		if wait := at.Sub(l.cfg.Now()); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
			}
			continue // the clock moved; choose again
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l.syncOne(ctx, name, head)
	}
}

// next returns the feed due first, when, and whether its head is due (else
// a gap resume is).
func (l *Loop) next() (name string, at time.Time, head bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.order {
		st := l.feeds[n].status
		if name == "" || st.NextHeadPoll.Before(at) {
			name, at, head = n, st.NextHeadPoll, true
		}
		if !st.NextResume.IsZero() && st.NextResume.Before(at) {
			name, at, head = n, st.NextResume, false
		}
	}
	return name, at, head
}

func (l *Loop) syncOne(ctx context.Context, name string, head bool) {
	l.mu.Lock()
	f := l.feeds[name]
	l.mu.Unlock()
	var res Result
	var err error
	if head {
		res, err = l.cfg.Syncer.Sync(ctx, name, f.src)
	} else {
		res, err = l.cfg.Syncer.Resume(ctx, name, f.src)
	}
	if len(res.Items) > 0 && l.cfg.OnItems != nil {
		l.cfg.OnItems(ctx, name, res.Items)
	}
	if err != nil && ctx.Err() == nil {
		l.cfg.Logger.Warn("feed: sync failed", "feed", name, "err", err)
	}
	skipped := l.logSkipped(name, res.Skipped)
	now := l.cfg.Now()
	interval := l.interval(name)
	retry := retryAt(err, now)
	if retry.IsZero() {
		retry = retryAt(res.Refusal, now)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	st := &f.status
	st.LastSync, st.LastItems, st.LastPages, st.LastStop = now, len(res.Items), res.Pages, res.Stop
	st.Items += int64(len(res.Items))
	st.LastSkipped, st.Skipped, st.RetryAt = skipped, st.Skipped+int64(skipped), retry
	st.Forgotten += res.Forgotten
	st.Interval = interval
	st.LastError = ""
	switch {
	case err != nil:
		st.LastError = err.Error()
		if ctx.Err() == nil {
			st.Failures++
		}
	case res.Refusal != nil:
		st.LastError = res.Refusal.Error()
	default:
		st.LastSuccess = now
	}
	if ctx.Err() != nil && err != nil {
		// Leadership ended mid-sync: the next leader starts from the
		// store; nothing to schedule.
		return
	}
	if head {
		st.LastHeadPoll = now
		st.NextHeadPoll = now.Add(interval)
	}
	if err == nil {
		st.Gaps = res.Gaps
		f.failures = 0
	}
	st.NextResume = time.Time{}
	switch {
	case err != nil:
		// Back off: GapEvery, doubling, at most the poll interval. A
		// failed head poll is retried the same way.
		f.failures++
		delay := min(l.cfg.GapEvery<<min(f.failures-1, 16), interval)
		if head {
			st.NextHeadPoll = now.Add(delay)
		} else if st.Gaps > 0 {
			st.NextResume = now.Add(delay)
		}
	case res.Stop == StopNotAdmitted && res.Gaps > 0:
		st.NextResume = now.Add(l.refusedDelay(now, res.Refusal))
	case res.Gaps > 0:
		st.NextResume = now.Add(l.cfg.GapEvery)
	}
	if !retry.IsZero() {
		// Nothing goes to a source before the time it said.
		st.NextHeadPoll = later(st.NextHeadPoll, retry)
		if !st.NextResume.IsZero() {
			st.NextResume = later(st.NextResume, retry)
		}
	}
	if !st.NextResume.IsZero() && !st.NextResume.Before(st.NextHeadPoll) {
		// The head poll comes first and resumes the gaps anyway.
		st.NextResume = time.Time{}
	}
}

func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// logSkipped logs, once per sync, the items the source could not
// identify, and returns how many there were.
func (l *Loop) logSkipped(name string, skipped map[string]int) int {
	n := 0
	reasons := make([]string, 0, len(skipped))
	for r, c := range skipped {
		n += c
		reasons = append(reasons, fmt.Sprintf("%s: %d", r, c))
	}
	if n > 0 {
		sort.Strings(reasons)
		l.cfg.Logger.Warn("feed: items skipped; the source sent them without an identity",
			"feed", name, "skipped", n, "reasons", strings.Join(reasons, "; "))
	}
	return n
}

// refusedDelay is how long a refused gap waits: a pacing refusal for its
// slot, an exhausted allowance until it resets (at most RefusedRetry, as a
// smaller head-poll reserve later in the day frees room).
func (l *Loop) refusedDelay(now time.Time, refusal error) time.Duration {
	var paced *budget.PacedError
	if errors.As(refusal, &paced) && paced.RetryAfter > 0 {
		return paced.RetryAfter
	}
	var ex *budget.ExhaustedError
	if errors.As(refusal, &ex) && ex.ResetAt.After(now) {
		return min(ex.ResetAt.Sub(now), l.cfg.RefusedRetry)
	}
	return l.cfg.RefusedRetry
}

func (l *Loop) interval(name string) time.Duration {
	if l.cfg.Intervals == nil {
		return l.cfg.PollEvery
	}
	d, err := l.cfg.Intervals.PollInterval(name)
	if err != nil || d <= 0 {
		return l.cfg.PollEvery
	}
	return d
}

func (l *Loop) setLeading(v bool) {
	l.mu.Lock()
	changed := l.leading != v
	l.leading = v
	l.mu.Unlock()
	if changed && l.cfg.Elector != nil {
		l.cfg.Logger.Info("feed: loop leadership changed", "leading", v, "feeds", len(l.order))
	}
}
