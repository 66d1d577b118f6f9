package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/jackc/pgx/v5"
)

// guardQueueMax bounds the publications waiting for the writer. Transitions
// are rare (one per trip or recovery); a queue this long means the
// database is gone, and the oldest publications are dropped: the other
// nodes then learn from their own evidence, as without sharing.
const guardQueueMax = 1024

// guardShareTimeout bounds each statement of the link.
const guardShareTimeout = 5 * time.Second

// GuardShare implements guard.ShareStore: a Link that shares a guard's
// transitions with the guards of every other process on this database.
// Current openings live in the table guard_openings, so that a node that
// starts or reconnects loads them; changes travel by NOTIFY on the channel
// 'hostguard_guard.<schema>', so that databases holding several hostguard
// schemas do not hear each other; the lease on each endpoint's next trial
// is a row of guard_leases. The closed path never reaches the database:
// only transitions do, one transaction each, written by a goroutine of the
// link's own.
func (s *Store) GuardShare(p guard.StoreShareParams) (guard.Link, error) {
	if p.LeaseFor < 0 {
		return nil, &guard.InputError{Field: "lease_for", Reason: fmt.Sprintf("is %v; want 0 (default %v) or more", p.LeaseFor, guard.DefaultLeaseFor)}
	}
	if p.LeaseFor == 0 {
		p.LeaseFor = guard.DefaultLeaseFor
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.Node == "" {
		p.Node = newWakeID()
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &guardLink{s: s, p: p, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), wdone: make(chan struct{})}
	go l.write()
	return l, nil
}

type guardLink struct {
	s      *Store
	p      guard.StoreShareParams
	ctx    context.Context // ends with Close
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   []guard.Transition
	closed  bool
	started bool
	channel string
	kick    chan struct{} // a publication is queued; buffer 1
	wdone   chan struct{} // the writer returned
	wconn   *pgx.Conn     // the writer's connection; nil until needed and after a failure; the writer's alone
	ldone   chan struct{} // the listener returned; nil until Start

	// remote holds the other nodes' openings this link delivered, by
	// endpoint, with their until: the listener's alone. After a
	// reconnection, one that is no longer in the table closed while the
	// link was away.
	remote map[string]time.Time
}

// note is a NOTIFY's payload: one transition and the node it came from.
type note struct {
	Node     string `json:"n"`
	Change   uint8  `json:"c"`
	Endpoint string `json:"e,omitempty"`
	At       int64  `json:"at"`
	Since    int64  `json:"s,omitempty"`
	Until    int64  `json:"u,omitempty"`
}

func (n note) transition() guard.Transition {
	t := guard.Transition{Endpoint: n.Endpoint, Change: guard.Change(n.Change), At: time.Unix(0, n.At).UTC()}
	if t.Change == guard.ChangeOpened {
		t.Since, t.Until = time.Unix(0, n.Since).UTC(), time.Unix(0, n.Until).UTC()
	}
	return t
}

// Publish implements guard.Sharer: it queues t for the writer and returns.
func (l *guardLink) Publish(t guard.Transition) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	if len(l.queue) >= guardQueueMax {
		l.queue = l.queue[1:]
	}
	l.queue = append(l.queue, t)
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// write sends queued publications until Close, then what is left.
func (l *guardLink) write() {
	defer close(l.wdone)
	defer l.dropWriterConn()
	// Connected and the channel named before the first trip, so that it
	// does not wait for either; a failure here is tried again then.
	ctx, cancel := context.WithTimeout(l.ctx, guardShareTimeout)
	if conn, err := l.writerConn(ctx); err == nil {
		if _, err := l.channelName(ctx, conn); err != nil {
			l.dropWriterConn()
		}
	}
	cancel()
	for {
		select {
		case <-l.kick:
		case <-l.ctx.Done():
			l.flush(context.Background())
			return
		}
		l.flush(l.ctx)
	}
}

// flush writes the queue, one transaction per transition. A failed write
// is dropped: the transition stays local, which is where it would be
// without sharing.
func (l *guardLink) flush(ctx context.Context) {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.mu.Unlock()
			return
		}
		t := l.queue[0]
		l.queue = l.queue[1:]
		l.mu.Unlock()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), guardShareTimeout)
		_ = l.publish(wctx, t)
		cancel()
	}
}

// publish writes one transition and announces it in one statement: the
// NOTIFY is delivered when the row change commits.
func (l *guardLink) publish(ctx context.Context, t guard.Transition) error {
	conn, err := l.writerConn(ctx)
	if err != nil {
		return err
	}
	channel, err := l.channelName(ctx, conn)
	if err != nil {
		l.dropWriterConn()
		return err
	}
	n := note{Node: l.p.Node, Change: uint8(t.Change), Endpoint: t.Endpoint, At: t.At.UnixNano()}
	if t.Change == guard.ChangeOpened {
		n.Since, n.Until = t.Since.UnixNano(), t.Until.UnixNano()
	}
	payload, err := json.Marshal(n)
	if err != nil {
		return err
	}
	// One statement, so one round trip: the row changes and the NOTIFY
	// commit together, and a lost opening costs another node one more
	// trip at most, so the commit does not wait for the disk.
	const notify = `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)`
	var q string
	args := []any{channel, string(payload)}
	switch t.Change {
	case guard.ChangeOpened:
		// The holder of the lease reports its trial's failure: the next
		// open period gets a lease of its own.
		q = `WITH o AS (INSERT INTO guard_openings AS o (endpoint, node, opened_at, since, until)
				VALUES ($3, $4, $5, $6, $7)
				ON CONFLICT (endpoint) DO UPDATE SET node = excluded.node, opened_at = excluded.opened_at,
					since = excluded.since, until = excluded.until
				WHERE o.until < excluded.until),
			l AS (DELETE FROM guard_leases WHERE endpoint = $3 AND node = $4)
			` + notify
		args = append(args, t.Endpoint, l.p.Node, t.At, t.Since, t.Until)
	case guard.ChangeAnswered, guard.ChangeReset:
		q = `WITH o AS (DELETE FROM guard_openings WHERE endpoint = $3),
			l AS (DELETE FROM guard_leases WHERE endpoint = $3)
			` + notify
		args = append(args, t.Endpoint)
	case guard.ChangeResetAll:
		// Several rows: taken in byte order, as every multi-row
		// statement here is, so that two resets cannot deadlock.
		q = `WITH o AS (DELETE FROM guard_openings WHERE endpoint IN
				(SELECT endpoint FROM guard_openings ORDER BY endpoint COLLATE "C" FOR UPDATE)),
			l AS (DELETE FROM guard_leases WHERE endpoint IN
				(SELECT endpoint FROM guard_leases ORDER BY endpoint COLLATE "C" FOR UPDATE))
			` + notify
	default:
		return nil
	}
	if _, err = conn.Exec(ctx, q, args...); err != nil {
		l.dropWriterConn()
	}
	return err
}

// writerConn returns the writer's connection, opening it if needed.
//
// Publications have a connection of their own, not one from the pool:
// they are rare, so a pooled connection was nearly always idle for more
// than a second when one came, and the pool pinged it first (pgxpool's
// default), a second round trip whose own wait on a busy server was half
// of a trip's delay to the other nodes in the slowest cases; and in the
// daemon the pool's connections also serve retry claims, which a
// publication would queue behind. Like the listener's, the connection is
// opened again after a failure, when the next publication needs it.
func (l *guardLink) writerConn(ctx context.Context) (*pgx.Conn, error) {
	if l.wconn != nil {
		return l.wconn, nil
	}
	conn, err := pgx.ConnectConfig(ctx, l.s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	l.wconn = conn
	return conn, nil
}

// dropWriterConn closes the writer's connection, briefly bounded.
func (l *guardLink) dropWriterConn() {
	if l.wconn == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.wconn.Close(cctx)
	l.wconn = nil
}

// Claim implements guard.Claimer with one conditional upsert: the lease on
// an endpoint's trial goes to the first node that asks for an open period,
// and to another once it expires or a later period is claimed.
func (l *guardLink) Claim(ctx context.Context, p guard.ClaimParams) (guard.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, guardShareTimeout)
	defer cancel()
	now := l.p.Now()
	var node string
	var expires time.Time
	var err error
	// The row the upsert found may be gone by the time it is read (its
	// holder published a result): then the upsert is tried again.
	for range 3 {
		err = l.s.pool.QueryRow(ctx, `INSERT INTO guard_leases AS l (endpoint, node, until, expires_at)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (endpoint) DO UPDATE SET node = excluded.node, until = excluded.until, expires_at = excluded.expires_at
			WHERE l.expires_at <= $5 OR l.until < excluded.until
			RETURNING node, expires_at`, p.Endpoint, l.p.Node, p.Until, now.Add(l.p.LeaseFor), now).Scan(&node, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			err = l.s.pool.QueryRow(ctx, `SELECT node, expires_at FROM guard_leases WHERE endpoint = $1`, p.Endpoint).Scan(&node, &expires)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
	}
	if err != nil {
		return guard.Lease{}, fmt.Errorf("postgres: guard lease: %w", err)
	}
	return guard.Lease{Held: node == l.p.Node, Expires: expires.UTC()}, nil
}

// Start implements guard.Link.
func (l *guardLink) Start(ctx context.Context, apply func(guard.Transition)) error {
	l.mu.Lock()
	if l.closed || l.started {
		l.mu.Unlock()
		return errors.New("postgres: guard share: started twice or closed")
	}
	l.started = true
	l.ldone = make(chan struct{})
	l.mu.Unlock()
	ready := make(chan error, 1)
	go l.listen(apply, ready)
	select {
	case err := <-ready:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listen keeps one LISTEN connection up until Close. After each
// (re)connection it loads the openings still running, since notifications
// sent while it was down are lost.
func (l *guardLink) listen(apply func(guard.Transition), ready chan<- error) {
	defer close(l.ldone)
	first := true
	pause := retryListenMinPause
	for l.ctx.Err() == nil {
		err := l.listenOnce(apply, func() {
			pause = retryListenMinPause
			if first {
				first = false
				ready <- nil
			}
		})
		if first {
			first = false
			ready <- fmt.Errorf("postgres: guard share: %w", err)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-l.ctx.Done():
			t.Stop()
			return
		}
		pause = min(2*pause, retryListenMaxPause)
	}
}

func (l *guardLink) listenOnce(apply func(guard.Transition), listening func()) error {
	ctx := l.ctx
	conn, closeConn, err := l.s.listenConn(ctx, l.channelName)
	if err != nil {
		return err
	}
	defer closeConn()
	// Listening first: an opening committed from here on is announced
	// even if the load below misses it.
	rows, err := conn.Query(ctx, `SELECT endpoint, node, opened_at, since, until FROM guard_openings
		WHERE until > $1`, l.p.Now())
	if err != nil {
		return err
	}
	var loaded []guard.Transition
	running := map[string]bool{} // every opening still running, this node's too
	for rows.Next() {
		t := guard.Transition{Change: guard.ChangeOpened}
		var node string
		if err := rows.Scan(&t.Endpoint, &node, &t.At, &t.Since, &t.Until); err != nil {
			rows.Close()
			return err
		}
		running[t.Endpoint] = true
		if node != l.p.Node {
			loaded = append(loaded, t)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range l.missedCloses(running) {
		apply(t)
	}
	for _, t := range loaded {
		l.deliver(apply, t)
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var msg note
		if json.Unmarshal([]byte(n.Payload), &msg) != nil || msg.Node == l.p.Node {
			continue
		}
		l.deliver(apply, msg.transition())
	}
}

// deliver passes t on and keeps track of the remote openings delivered.
func (l *guardLink) deliver(apply func(guard.Transition), t guard.Transition) {
	if l.remote == nil {
		l.remote = map[string]time.Time{}
	}
	switch t.Change {
	case guard.ChangeOpened:
		if t.Until.After(l.remote[t.Endpoint]) {
			l.remote[t.Endpoint] = t.Until
		}
	case guard.ChangeAnswered, guard.ChangeReset:
		delete(l.remote, t.Endpoint)
	case guard.ChangeResetAll:
		clear(l.remote)
	}
	apply(t)
}

// missedCloses returns, after a (re)connection has loaded the endpoints
// whose openings are still running (still), an answer for each opening this link delivered before
// that is running by its until but no longer in the table: it was closed
// (answered or reset) while the link was away, and the notification was
// lost with the connection. Without it the guard would keep failing fast
// on a host the cluster saw answer, until the opening's until.
func (l *guardLink) missedCloses(still map[string]bool) []guard.Transition {
	now := l.p.Now()
	var out []guard.Transition
	for ep, until := range l.remote {
		switch {
		case !now.Before(until):
			delete(l.remote, ep) // over by itself, here as everywhere
		case !still[ep]:
			delete(l.remote, ep)
			out = append(out, guard.Transition{Endpoint: ep, Change: guard.ChangeAnswered, At: now})
		}
	}
	return out
}

// channelName is the NOTIFY channel, read once: the schema comes from the
// connection settings, the same for the pool and the listener.
func (l *guardLink) channelName(ctx context.Context, db rowQuerier) (string, error) {
	l.mu.Lock()
	name := l.channel
	l.mu.Unlock()
	if name != "" {
		return name, nil
	}
	if err := db.QueryRow(ctx, `SELECT 'hostguard_guard.' || current_schema()`).Scan(&name); err != nil {
		return "", err
	}
	l.mu.Lock()
	l.channel = name
	l.mu.Unlock()
	return name, nil
}

// Close implements guard.Link.
func (l *guardLink) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	ldone := l.ldone
	l.mu.Unlock()
	l.cancel()
	<-l.wdone
	if ldone != nil {
		<-ldone
	}
	return nil
}
