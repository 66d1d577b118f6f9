package leader_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostguard/hostguard/leader"
)

// memStore is a leader store in memory whose first campaign takes slow to
// answer, after it has won: the lease is stamped from the campaign's Now.
type memStore struct {
	slow time.Duration

	mu    sync.Mutex
	lease leader.Lease
	calls int
}

func (m *memStore) LeaderCampaign(ctx context.Context, p leader.StoreCampaignParams) (leader.Lease, bool, error) {
	m.mu.Lock()
	won := m.lease.Node == "" || m.lease.Node == p.Node || !m.lease.ExpiresAt.After(p.Now)
	if won {
		m.lease = leader.Lease{Name: p.Name, Node: p.Node, Term: m.lease.Term + 1, ExpiresAt: p.Now.Add(p.LeaseFor)}
	}
	l := m.lease
	m.calls++
	first := m.calls == 1
	m.mu.Unlock()
	if first {
		time.Sleep(m.slow)
	}
	return l, won, nil
}

func (m *memStore) LeaderRenew(_ context.Context, p leader.StoreRenewParams) (leader.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease.Node != p.Node || m.lease.Term != p.Term || !m.lease.ExpiresAt.After(p.Now) {
		return leader.Lease{}, leader.ErrLost
	}
	m.lease.ExpiresAt = p.Now.Add(p.LeaseFor)
	return m.lease, nil
}

func (m *memStore) LeaderResign(_ context.Context, p leader.StoreResignParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease.Node == p.Node && m.lease.Term == p.Term {
		m.lease.Node = ""
	}
	return nil
}

func (m *memStore) LeaderGet(_ context.Context, name string) (leader.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease, nil
}

// TestSlowCampaignKeepsItsTerm: a campaign that answers 7.5 s after it
// was sent, on a 15 s lease, still leads its term a minute later.
func TestSlowCampaignKeepsItsTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{slow: 7500 * time.Millisecond}
		el, err := leader.New(st, leader.Config{NodeID: "a", LeaseFor: 15 * time.Second, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		terms := make(chan int64, 8)
		done := make(chan error, 1)
		go func() {
			done <- el.Run(ctx, func(ctx context.Context) error {
				term, _ := leader.TermFromContext(ctx)
				terms <- term
				<-ctx.Done()
				return nil
			})
		}()
		if term := <-terms; term != 1 {
			t.Fatalf("first term %d, want 1", term)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		leading, term, since := el.Leading(), el.Term(), len(terms)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !leading || term != 1 || since != 0 {
			t.Fatalf("a minute after a slow campaign won: leading %v, term %d, %d terms since; want term 1 throughout", leading, term, since)
		}
	})
}
