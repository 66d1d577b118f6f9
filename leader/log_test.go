package leader_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/logtest"
	"github.com/hostguard/hostguard/leader"
)

// downStore fails every campaign and reports each attempt.
type downStore struct {
	leader.Store
	attempts chan struct{}
}

func (s *downStore) LeaderCampaign(context.Context, leader.StoreCampaignParams) (leader.Lease, bool, error) {
	s.attempts <- struct{}{}
	return leader.Lease{}, false, errors.New("connection refused")
}

func TestAStoreOutageIsLoggedOnce(t *testing.T) {
	t.Parallel()
	var out logtest.Buffer
	st := &downStore{attempts: make(chan struct{})}
	el, err := leader.New(st, leader.Config{LeaseFor: 40 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- el.Run(ctx, func(context.Context) error { return errors.New("never runs") }) }()
	for range 5 {
		<-st.attempts
	}
	cancel()
	go func() {
		for range st.attempts { // a last attempt may be under way
		}
	}()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	close(st.attempts)
	if n := strings.Count(out.String(), "campaign failed"); n != 1 {
		t.Fatalf("%d log lines for one outage; want 1:\n%s", n, out.String())
	}
	if el.Leading() {
		t.Fatal("leading without a store")
	}
}
