package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hostguard/hostguard/internal/retrystore"
	"github.com/hostguard/hostguard/retry/retrydriver"
	"github.com/jackc/pgx/v5"
)

// retryWaker wakes waiting claims on every node. After a write that may
// make work claimable commits, the store wakes its own waiting claims at
// once and asks its notifier to send a NOTIFY on the channel
// 'hostguard_retry.<schema>'; the notifier sends one at a time, at most
// one per notifyGap, and requests that arrive meanwhile share the next
// one. Each handle with waiting claims listens on a connection of its
// own. The NOTIFY carries the handle's random id, so that its own listener
// skips what it already woke. Listener and notifier start when first
// needed and stop when the Store closes.
type retryWaker struct {
	mu      sync.Mutex
	sig     retrystore.Signal
	started bool // the listener
	closed  bool
	ready   chan struct{} // closed after the first attempt to listen
	cancel  context.CancelFunc
	done    chan struct{}

	id         string        // this handle's payload, drawn by Open and never changed
	notifying  bool          // the notifier runs
	notify     chan struct{} // a pending request, buffer 1
	notifyDone chan struct{}
	gap        time.Duration // notifyGap, or what a test set
	channel    string        // the channel's name once known, under mu
}

// newWakeID draws a handle's NOTIFY payload.
func newWakeID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// retryChannel is the channel's name, read from the database once: the
// schema comes from the connection settings, the same for the pool and
// the listener's connection.
func (s *Store) retryChannel(ctx context.Context, db rowQuerier) (string, error) {
	w := &s.wake
	w.mu.Lock()
	name := w.channel
	w.mu.Unlock()
	if name != "" {
		return name, nil
	}
	if err := db.QueryRow(ctx, `SELECT 'hostguard_retry.' || current_schema()`).Scan(&name); err != nil {
		return "", err
	}
	w.mu.Lock()
	w.channel = name
	w.mu.Unlock()
	return name, nil
}

// Reconnection pauses after the listening connection fails: a store
// outage is retried without spinning.
const (
	retryListenMinPause = 100 * time.Millisecond
	retryListenMaxPause = 5 * time.Second
)

// RetryWake implements retrydriver.Store: the channel closes when any node
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
			pause = retryListenMinPause
			// Wake the waiters from before this connection, then let the
			// first RetryWake return: a channel it takes now is one the
			// listener serves, and the catch-up wake must not reach it.
			w.sig.Fire()
			if first {
				first = false
				close(w.ready)
			}
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
	conn, closeConn, err := s.listenConn(ctx, s.retryChannel)
	if err != nil {
		return err
	}
	defer closeConn()
	listening()
	w := &s.wake
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload != w.id {
			w.sig.Fire()
		}
	}
}

// retryChanged is called after a committed write that may make work
// claimable: it wakes this handle's waiting claims and has the notifier
// tell the other nodes. It never blocks on the database.
func (s *Store) retryChanged() {
	w := &s.wake
	w.sig.Fire()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if !w.notifying {
		w.notifying = true
		w.notify = make(chan struct{}, 1)
		w.notifyDone = make(chan struct{})
		go s.retryNotifier(w.id, w.gap, w.notify, w.notifyDone)
	}
	select {
	case w.notify <- struct{}{}:
	default: // one is pending already; it covers this change too
	}
}

// notifyGap is the least time from one NOTIFY to the next. Under a burst
// of writes a NOTIFY per write cost PostgreSQL about 100 µs of CPU each
// (and every listening node a wake-up), for other nodes' claims that the
// first one had already sent looking; with the gap, requests that arrive
// within it share one NOTIFY at its end. A lone write is still announced
// at once, so other nodes only wait longer while writes keep coming.
const notifyGap = 2 * time.Millisecond

// retryNotifier sends one NOTIFY per batch of requests until the request
// channel closes, at most one per notifyGap. A failed NOTIFY is dropped:
// other nodes' waiting claims fall back to their poll.
func (s *Store) retryNotifier(id string, gap time.Duration, requests <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for range requests {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if channel, err := s.retryChannel(ctx, s.pool); err == nil {
			// The NOTIFY's transaction does not wait for its commit to
			// reach the disk: it carries no data, a crash loses the
			// listeners' connections with it, and a flush per wake-up
			// took a turn of the WAL's flushes from the writes that
			// carry data (the write itself was flushed before
			// retryChanged was called).
			_, _ = s.pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)`, channel, id)
		}
		cancel()
		// A pause, not a wait for anything: requests arriving meanwhile
		// collect in the channel's one slot.
		time.Sleep(gap - time.Since(sent))
	}
}

// closeWake stops the listener and the notifier, if they run, and waits
// for them.
func (s *Store) closeWake() {
	w := &s.wake
	w.mu.Lock()
	w.closed = true
	started, cancel, done := w.started, w.cancel, w.done
	notifying, notify, notifyDone := w.notifying, w.notify, w.notifyDone
	w.mu.Unlock()
	if started {
		cancel()
		<-done
	}
	if notifying {
		close(notify)
		<-notifyDone
	}
	w.sig.Fire()
}

// RetryNextDue implements retrydriver.Store through the wake index.
func (s *Store) RetryNextDue(ctx context.Context, _ retrydriver.NextDueParams) (retrydriver.NextDueResult, error) {
	var at *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT min(next_at) FROM retry_items WHERE NOT ready AND next_at IS NOT NULL`).Scan(&at); err != nil {
		return retrydriver.NextDueResult{}, fmt.Errorf("postgres: retry next due: %w", err)
	}
	if at == nil {
		return retrydriver.NextDueResult{}, nil
	}
	return retrydriver.NextDueResult{At: at.UTC()}, nil
}

// listenConn opens a connection of its own (LISTEN holds it for as long
// as it listens, so it cannot come from the pool) and listens on the
// channel that channel names for it. closeConn closes it, briefly bounded.
func (s *Store) listenConn(ctx context.Context, channel func(context.Context, rowQuerier) (string, error)) (conn *pgx.Conn, closeConn func(), err error) {
	conn, err = pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, nil, err
	}
	closeConn = func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}
	name, err := channel(ctx, conn)
	if err == nil {
		_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{name}.Sanitize())
	}
	if err != nil {
		closeConn()
		return nil, nil, err
	}
	return conn, closeConn, nil
}

// rowQuerier is what naming a channel needs: a connection or the pool.
type rowQuerier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}
