package leader

import (
	"context"
	"errors"
	"time"
)

// ErrLost is returned by Store.LeaderRenew when the lease is no longer the
// caller's: it expired, or another node took it.
var ErrLost = errors.New("leader: lease lost")

// Store keeps one lease per election name. store/postgres keeps a lease row
// (the holder, a term and an expiry); store/sqlite serves a single node,
// which always leads with term 1. hostguard.Open returns a store that
// implements it.
//
// Implementations take every time from their parameters, never from a
// clock of their own, so that fake clocks work. The Elector's times agree
// across nodes when they come from one clock: the store's cluster clock
// (Config.Now nil) or clocks that agree to well within a lease.
type Store interface {
	// LeaderCampaign takes the lease p.Name for p.Node when it is free
	// (never held, resigned, or expired at p.Now) or already p.Node's:
	// the term grows by one and the lease runs until p.Now + p.LeaseFor.
	// Otherwise it changes nothing. Either way it returns the lease as it
	// stands; won says whether p.Node holds it now. A zero ExpiresAt means
	// the lease never expires (a single-node store) and needs no renewal.
	LeaderCampaign(ctx context.Context, p StoreCampaignParams) (lease Lease, won bool, err error)
	// LeaderRenew extends the lease to p.Now + p.LeaseFor if p.Node still
	// holds it with term p.Term and it has not expired at p.Now; otherwise
	// it fails with ErrLost and changes nothing.
	LeaderRenew(ctx context.Context, p StoreRenewParams) (Lease, error)
	// LeaderResign frees the lease if p.Node holds it with term p.Term, so
	// that another node can take it at once; the term is kept, so the next
	// holder's term is higher. Otherwise it does nothing.
	LeaderResign(ctx context.Context, p StoreResignParams) error
	// LeaderGet returns the lease of name; a free lease has an empty Node
	// (and term 0 if never held). A single-node store, where every node
	// leads, reports term 1 with an empty Node.
	LeaderGet(ctx context.Context, name string) (Lease, error)
}

// Lease is who leads an election, for how long, and in which term. The term
// is a fencing token: it grows with every change of holder, so work stamped
// with an older term can be told apart and refused.
type Lease struct {
	Name      string
	Node      string // "" when nobody holds it
	Term      int64
	ExpiresAt time.Time // zero: never
}

// StoreCampaignParams is the input of Store.LeaderCampaign.
type StoreCampaignParams struct {
	Name     string
	Node     string
	Now      time.Time
	LeaseFor time.Duration
}

// StoreRenewParams is the input of Store.LeaderRenew.
type StoreRenewParams struct {
	Name     string
	Node     string
	Term     int64
	Now      time.Time
	LeaseFor time.Duration
}

// StoreResignParams is the input of Store.LeaderResign.
type StoreResignParams struct {
	Name string
	Node string
	Term int64
	Now  time.Time
}
