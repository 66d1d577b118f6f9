package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hostguard/hostguard/internal/retrystore"
	"github.com/hostguard/hostguard/retry"
	"github.com/jackc/pgx/v5"
)

// retryWaker listens for the retry_items_notify trigger's notifications
// on a connection of its own and wakes this handle's waiting claims. It
// starts with the first waiting claim and stops when the Store closes.
type retryWaker struct {
	mu      sync.Mutex
	sig     retrystore.Signal
	started bool
	closed  bool
	ready   chan struct{} // closed after the first attempt to listen
	cancel  context.CancelFunc
	done    chan struct{}
}

// Reconnection pauses after the listening connection fails: a store
// outage is retried without spinning.
const (
	retryListenMinPause = 100 * time.Millisecond
	retryListenMaxPause = 5 * time.Second
)

// RetryWake implements retry.Store: the channel closes when any node
// commits a change that may make work claimable. The first call opens the
// listening connection; if that fails, the channel closes only at the next
// successful reconnection, and waiting claims fall back to their poll.
func (s *Store) RetryWake(ctx context.Context) (<-chan struct{}, error) {
	w := &s.wake
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, errors.New("postgres: retry wake: store closed")
	}
	if !w.started {
		w.started = true
		w.ready = make(chan struct{})
		w.done = make(chan struct{})
		lctx, cancel := context.WithCancel(context.Background())
		w.cancel = cancel
		go s.retryListen(lctx)
	}
	ready := w.ready
	w.mu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return w.sig.Wait(), nil
}

// retryListen keeps one LISTEN connection up until ctx ends. Every
// (re)connection wakes all waiters, since notifications sent while it was
// down are lost.
func (s *Store) retryListen(ctx context.Context) {
	w := &s.wake
	defer close(w.done)
	first := true
	pause := retryListenMinPause
	for ctx.Err() == nil {
		err := s.retryListenOnce(ctx, func() {
			if first {
				first = false
				close(w.ready)
			}
			pause = retryListenMinPause
			w.sig.Fire()
		})
		if first {
			first = false
			close(w.ready)
		}
		if ctx.Err() != nil {
			return
		}
		_ = err // the waiters' poll covers the outage; the next attempt may succeed
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		pause = min(2*pause, retryListenMaxPause)
	}
}

func (s *Store) retryListenOnce(ctx context.Context, listening func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	var channel string
	if err := conn.QueryRow(ctx, `SELECT 'hostguard_retry.' || current_schema()`).Scan(&channel); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		w := &s.wake
		w.sig.Fire()
	}
}

// closeWake stops the listener, if it runs, and waits for it.
func (s *Store) closeWake() {
	w := &s.wake
	w.mu.Lock()
	w.closed = true
	started, cancel, done := w.started, w.cancel, w.done
	w.mu.Unlock()
	if started {
		cancel()
		<-done
	}
	w.sig.Fire()
}

// RetryNextDue implements retry.Store through the wake index.
func (s *Store) RetryNextDue(ctx context.Context, _ retry.StoreNextDueParams) (retry.StoreNextDueResult, error) {
	var at *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT min(next_at) FROM retry_items WHERE NOT ready AND next_at IS NOT NULL`).Scan(&at); err != nil {
		return retry.StoreNextDueResult{}, fmt.Errorf("postgres: retry next due: %w", err)
	}
	if at == nil {
		return retry.StoreNextDueResult{}, nil
	}
	return retry.StoreNextDueResult{At: at.UTC()}, nil
}
