package sqlite

import (
	"context"

	"github.com/hostguard/hostguard/leader"
)

// An SQLite store serves one node (its file is local to one machine), so
// there is nobody to elect against: every campaign wins, with term 1, and
// the lease never expires. A lease row would only make a restarted process
// wait for its own dead predecessor's lease to expire.

// LeaderCampaign implements leader.Store: it always wins.
func (s *Store) LeaderCampaign(_ context.Context, p leader.StoreCampaignParams) (leader.Lease, bool, error) {
	return leader.Lease{Name: p.Name, Node: p.Node, Term: 1}, true, nil
}

// LeaderRenew implements leader.Store; a lease that never expires needs no
// renewal, and keeping one is always possible.
func (s *Store) LeaderRenew(_ context.Context, p leader.StoreRenewParams) (leader.Lease, error) {
	return leader.Lease{Name: p.Name, Node: p.Node, Term: 1}, nil
}

// LeaderResign implements leader.Store; there is nothing to free.
func (s *Store) LeaderResign(context.Context, leader.StoreResignParams) error { return nil }

// LeaderGet implements leader.Store: the election is always in term 1, led
// by whichever node asks (Node is empty).
func (s *Store) LeaderGet(_ context.Context, name string) (leader.Lease, error) {
	return leader.Lease{Name: name, Term: 1}, nil
}
