package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/internal/storeclock"
)

// Elector takes part in one election on a shared store and runs a function
// only while it leads. It is safe for concurrent use; Run may be active
// once at a time.
//
// On PostgreSQL the leader holds a lease row with an expiry and a term; it
// renews the lease every RenewEvery, and when it cannot, it cancels its
// work before the lease expires, so that two leaders never overlap (the
// nodes read one clock, the store's, unless Config.Now says otherwise).
// On SQLite, a single node, every elector leads at once with term 1.
type Elector struct {
	st  Store
	cfg Config
	log *slog.Logger

	running atomic.Bool
	leading atomic.Bool
	term    atomic.Int64
}

// New returns an Elector over st. It checks cfg and names the bad field.
func New(st Store, cfg Config) (*Elector, error) {
	if st == nil {
		return nil, errors.New("leader: nil Store")
	}
	cfg.Now = storeclock.Or(cfg.Now, st)
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Elector{st: st, cfg: cfg, log: cfg.Logger.With("election", cfg.Name, "node", cfg.NodeID)}, nil
}

// NodeID is this elector's node id.
func (e *Elector) NodeID() string { return e.cfg.NodeID }

// Leading reports whether this elector leads now.
func (e *Elector) Leading() bool { return e.leading.Load() }

// Term is the term this elector leads in, or 0 when it does not lead.
func (e *Elector) Term() int64 {
	if !e.leading.Load() {
		return 0
	}
	return e.term.Load()
}

// Now is the time by the clock this elector stamps leases with
// (Config.Now, on PostgreSQL the store's cluster clock by default): a
// Lease's ExpiresAt means something only against it, never against the
// node's own clock.
func (e *Elector) Now() time.Time { return e.cfg.Now() }

// Current reads the election's lease from the store: who leads, in which
// term, until when.
func (e *Elector) Current(ctx context.Context) (Lease, error) {
	l, err := e.st.LeaderGet(ctx, e.cfg.Name)
	if err != nil {
		return Lease{}, err
	}
	return l, nil
}

type termKey struct{}

// TermFromContext returns the term of the leadership that fn's context
// (see Run) belongs to: a fencing token to stamp work with.
func TermFromContext(ctx context.Context) (int64, bool) {
	t, ok := ctx.Value(termKey{}).(int64)
	return t, ok
}

// Run campaigns until ctx ends. Whenever this elector wins, Run calls fn
// with a context that is cancelled at once when leadership is lost (the
// lease was taken, or could not be renewed in time) or ctx ends; fn must
// return soon after. Run waits for fn to return before it campaigns again,
// so one process never runs two instances of fn.
//
// When ctx ends, Run resigns (frees the lease, so another node takes over
// without waiting for it to expire) and returns nil. When fn returns by
// itself while leading, Run resigns and returns fn's error: the work is
// over. Store errors are retried every RenewEvery; they are logged, not
// returned.
func (e *Elector) Run(ctx context.Context, fn func(ctx context.Context) error) error {
	if fn == nil {
		return errors.New("leader: Run with a nil function")
	}
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("leader: Run is already active on this Elector")
	}
	defer e.running.Store(false)
	failing := false // one log line per store outage, not one per attempt
	for {
		if ctx.Err() != nil {
			return nil
		}
		sent := time.Now()
		// A campaign that times out here may still have won in the store;
		// the lease then sits unused until it expires or this node's next
		// campaign takes it again in a new term. A generous timeout makes
		// that rare.
		cctx, cancel := context.WithTimeout(ctx, e.margin())
		lease, won, err := e.st.LeaderCampaign(cctx, StoreCampaignParams{
			Name: e.cfg.Name, Node: e.cfg.NodeID, Now: e.now(), LeaseFor: e.cfg.LeaseFor,
		})
		cancel()
		wait := e.cfg.RenewEvery
		if err == nil && failing {
			e.log.Info("leader: store answers again")
			failing = false
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if !failing {
				e.log.Warn("leader: campaign failed; retrying quietly until the store answers", "err", err)
				failing = true
			}
		case won:
			done, ferr := e.lead(ctx, lease, sent, fn)
			if done {
				return ferr
			}
			continue // lost: campaign again at once, in case the lease is still ours
		case !lease.ExpiresAt.IsZero():
			// Try again as soon as the holder's lease runs out, if that is
			// sooner than the usual interval.
			wait = min(wait, max(lease.ExpiresAt.Sub(e.now())+time.Millisecond, e.cfg.RenewEvery/10))
		}
		if !sleep(ctx, wait) {
			return nil
		}
	}
}

// lead runs fn for one term. done is true when Run should return (ctx ended
// or fn finished), with fn's error.
func (e *Elector) lead(ctx context.Context, lease Lease, sent time.Time, fn func(context.Context) error) (done bool, err error) {
	lctx, cancel := context.WithCancel(context.WithValue(ctx, termKey{}, lease.Term))
	defer cancel()
	// The watchdog takes leadership away RenewEvery/2 before the lease
	// can expire in the store, whatever the renew loop is doing.
	margin := e.margin()
	var watchdog *time.Timer
	if !lease.ExpiresAt.IsZero() {
		watchdog = time.AfterFunc(time.Until(sent.Add(margin)), func() {
			e.leading.Store(false)
			cancel()
		})
		defer watchdog.Stop()
	}
	e.term.Store(lease.Term)
	e.leading.Store(true)
	e.log.Info("leader: leading", "term", lease.Term)

	fnDone := make(chan error, 1)
	go func() { fnDone <- fn(lctx) }()
	fnReturned := false
	// stop ends this term: leadership is given up before fn is even told,
	// and fn has returned when stop does.
	stop := func(reason string) {
		e.leading.Store(false)
		cancel()
		if !fnReturned {
			<-fnDone
		}
		e.log.Info("leader: stopped leading", "term", lease.Term, "reason", reason)
	}
	// ended handles fn's context having been cancelled.
	ended := func() (bool, error) {
		if ctx.Err() != nil {
			stop("shutting down")
			e.resign(ctx, lease)
			return true, nil
		}
		stop("lease could not be renewed in time")
		return false, nil
	}

	var renew <-chan time.Time
	var renewTimer *time.Timer
	if watchdog != nil {
		renewTimer = time.NewTimer(e.renewAfter(sent))
		defer renewTimer.Stop()
		renew = renewTimer.C
	}
	for {
		select {
		case ferr := <-fnDone:
			fnReturned = true
			if lctx.Err() != nil {
				// fn returned because leadership (or ctx) ended.
				return ended()
			}
			e.leading.Store(false)
			cancel()
			e.resign(ctx, lease)
			e.log.Info("leader: work finished; resigned", "term", lease.Term)
			return true, ferr
		case <-lctx.Done():
			return ended()
		case <-renew:
			rsent := time.Now()
			l, err := e.st.LeaderRenew(lctx, StoreRenewParams{
				Name: lease.Name, Node: e.cfg.NodeID, Term: lease.Term, Now: e.now(), LeaseFor: e.cfg.LeaseFor,
			})
			switch {
			case errors.Is(err, ErrLost):
				stop("lease taken or expired")
				return false, nil
			case err != nil:
				if lctx.Err() == nil {
					e.log.Warn("leader: renew failed; retrying", "term", lease.Term, "err", err)
				}
				renewTimer.Reset(e.cfg.RenewEvery / 4)
				continue
			}
			if !watchdog.Stop() {
				// The watchdog fired while the renewal was in flight:
				// leadership is already given up.
				stop("lease renewed too late")
				return false, nil
			}
			watchdog.Reset(time.Until(rsent.Add(margin)))
			lease.ExpiresAt = l.ExpiresAt
			renewTimer.Reset(e.renewAfter(rsent))
		}
	}
}

func (e *Elector) resign(ctx context.Context, lease Lease) {
	if lease.ExpiresAt.IsZero() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.LeaseFor)
	defer cancel()
	err := e.st.LeaderResign(rctx, StoreResignParams{Name: lease.Name, Node: e.cfg.NodeID, Term: lease.Term, Now: e.now()})
	if err != nil {
		e.log.Warn("leader: resign failed; the lease will expire on its own", "term", lease.Term, "err", err)
	}
}

// margin is how long after sending a successful campaign or renewal this
// node may go on leading: the lease minus half a renewal interval, so that
// it stops before any other node can see the lease expire.
func (e *Elector) margin() time.Duration { return e.cfg.LeaseFor - e.cfg.RenewEvery/2 }

// renewAfter is the wait before renewing a lease whose campaign or
// renewal was sent at sent: RenewEvery, or less when the call took so
// long that the renewal would fall due less than half an interval before
// the watchdog stops the term. A campaign that took 7.5 s of a 15 s lease
// would otherwise lose its term 5 s after winning it, when the renewal
// and the watchdog fall due together; renewed 2.5 s after winning, the
// term counts from then.
func (e *Elector) renewAfter(sent time.Time) time.Duration {
	left := time.Until(sent.Add(e.margin()))
	return max(0, min(e.cfg.RenewEvery, left-e.cfg.RenewEvery/2))
}

func (e *Elector) now() time.Time { return e.cfg.Now().UTC().Truncate(time.Microsecond) }

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
