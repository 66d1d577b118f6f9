package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/leader"
	"github.com/jackc/pgx/v5"
)

// LeaderCampaign implements leader.Store with one conditional upsert: the
// row lock it takes makes concurrent campaigns of several nodes take turns,
// and each sees the winner's row.
func (s *Store) LeaderCampaign(ctx context.Context, p leader.StoreCampaignParams) (leader.Lease, bool, error) {
	l, err := scanLease(s.pool.QueryRow(ctx, `INSERT INTO leader_leases AS l (name, node, term, expires_at)
		VALUES ($1, $2, 1, $4)
		ON CONFLICT (name) DO UPDATE SET node = excluded.node, term = l.term + 1, expires_at = excluded.expires_at
		WHERE l.node = '' OR l.node = excluded.node OR l.expires_at <= $3
		RETURNING name, node, term, expires_at`, p.Name, p.Node, p.Now, p.Now.Add(p.LeaseFor)))
	if err == nil {
		return l, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return leader.Lease{}, false, fmt.Errorf("postgres: campaign: %w", err)
	}
	l, err = s.LeaderGet(ctx, p.Name)
	return l, false, err
}

// LeaderRenew implements leader.Store.
func (s *Store) LeaderRenew(ctx context.Context, p leader.StoreRenewParams) (leader.Lease, error) {
	l, err := scanLease(s.pool.QueryRow(ctx, `UPDATE leader_leases SET expires_at = $5
		WHERE name = $1 AND node = $2 AND term = $3 AND expires_at > $4
		RETURNING name, node, term, expires_at`, p.Name, p.Node, p.Term, p.Now, p.Now.Add(p.LeaseFor)))
	if errors.Is(err, pgx.ErrNoRows) {
		return leader.Lease{}, leader.ErrLost
	}
	if err != nil {
		return leader.Lease{}, fmt.Errorf("postgres: renew lease: %w", err)
	}
	return l, nil
}

// LeaderResign implements leader.Store.
func (s *Store) LeaderResign(ctx context.Context, p leader.StoreResignParams) error {
	_, err := s.pool.Exec(ctx, `UPDATE leader_leases SET node = '', expires_at = $4
		WHERE name = $1 AND node = $2 AND term = $3`, p.Name, p.Node, p.Term, p.Now)
	if err != nil {
		return fmt.Errorf("postgres: resign lease: %w", err)
	}
	return nil
}

// LeaderGet implements leader.Store.
func (s *Store) LeaderGet(ctx context.Context, name string) (leader.Lease, error) {
	l, err := scanLease(s.pool.QueryRow(ctx, `SELECT name, node, term, expires_at FROM leader_leases WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return leader.Lease{Name: name}, nil
	}
	if err != nil {
		return leader.Lease{}, fmt.Errorf("postgres: read lease: %w", err)
	}
	return l, nil
}

func scanLease(row pgx.Row) (leader.Lease, error) {
	var l leader.Lease
	err := row.Scan(&l.Name, &l.Node, &l.Term, &l.ExpiresAt)
	l.ExpiresAt = l.ExpiresAt.UTC()
	return l, err
}
