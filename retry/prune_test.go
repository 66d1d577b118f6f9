package retry

import (
	"context"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// pruneStore answers RetryPrune with a backlog of done items it deletes in
// the batches asked for, recording each call.
type pruneStore struct {
	nopStore
	backlog int
	calls   []retrydriver.PruneParams
}

func (p *pruneStore) RetryPrune(_ context.Context, q retrydriver.PruneParams) (retrydriver.PruneResult, error) {
	p.calls = append(p.calls, q)
	n := min(p.backlog, q.Limit)
	p.backlog -= n
	return retrydriver.PruneResult{Deleted: n}, nil
}

func TestPruneWorksInBoundedBatches(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		keep           time.Duration
		backlog        int
		deleted, calls int
	}{
		{0, 0, 0, 1},
		{0, 10, 10, 1},
		{0, pruneBatch, pruneBatch, 2}, // a full batch: look once more
		{0, 2*pruneBatch + 5, 2*pruneBatch + 5, 3},
		{0, (pruneBatches + 3) * pruneBatch, pruneBatches * pruneBatch, pruneBatches}, // one call's bound
		{-1, 10, 0, 0}, // off
		{time.Hour, 1, 1, 1},
	}
	for _, st := range steps {
		ps := &pruneStore{backlog: st.backlog}
		s, err := New(ps, Config{KeepDone: st.keep, Now: func() time.Time { return t0 }})
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.Prune(t.Context())
		if err != nil || n != st.deleted || len(ps.calls) != st.calls {
			t.Fatalf("keep %v, backlog %d: deleted %d in %d calls, %v; want %d in %d", st.keep, st.backlog, n, len(ps.calls), err, st.deleted, st.calls)
		}
		keep := st.keep
		if keep == 0 {
			keep = DefaultKeepDone
		}
		for _, c := range ps.calls {
			if c.Limit != pruneBatch || !c.Before.Equal(t0.Add(-keep)) || !c.Now.Equal(t0) {
				t.Fatalf("keep %v: call %+v; want limit %d before %v", st.keep, c, pruneBatch, t0.Add(-keep))
			}
		}
	}
}
