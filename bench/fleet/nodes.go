package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/transport"
	"github.com/jackc/pgx/v5"
)

// Lags collects how long after its trip each node learned of another
// node's opening, over every run of a policy.
type Lags struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *Lags) add(d time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d)
	l.mu.Unlock()
}

// Quantiles returns the count, median and 99th percentile.
func (l *Lags) Quantiles() (n int, p50, p99 time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.all) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(l.all)
	slices.Sort(s)
	return len(s), s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// NodesPolicy is hostguard with the daemon's settings on n nodes, each a
// guard with its own PostgreSQL store (a fresh schema per run on the
// server at dsn), sharing verdicts through it when share is set. Requests
// go to the nodes in turn, as through a load balancer in front of n
// daemons. lags collects the sharing delay.
func NodesPolicy(dsn string, n int, share bool, lags *Lags) Policy {
	name := fmt.Sprintf("hostguard-nodes%d", n)
	note := fmt.Sprintf("the daemon's settings on %d nodes sharing verdicts over PostgreSQL; requests to the nodes in turn", n)
	if !share {
		name += "-alone"
		note = fmt.Sprintf("the daemon's settings on %d nodes on one PostgreSQL, nothing shared", n)
	}
	return Policy{Name: name, Note: note, New: func(env Env) Client {
		c, err := newNodes(env, dsn, n, share, lags)
		if err != nil {
			panic(fmt.Sprintf("fleet: %s: %v", name, err))
		}
		return c
	}}
}

type nodesClient struct {
	next    atomic.Uint64
	clients []*http.Client
	guards  []*guard.Guard
	links   []guard.Link
	stores  []*postgres.Store
	drop    func()
}

func newNodes(env Env, dsn string, n int, share bool, lags *Lags) (*nodesClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "fleetsim_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	conn.Close(ctx)
	c := &nodesClient{drop: func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			conn.Close(ctx)
		}
	}}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	for i := range n {
		st, err := postgres.Open(ctx, u.String())
		if err != nil {
			c.Close()
			return nil, err
		}
		c.stores = append(c.stores, st)
		who := fmt.Sprintf("node %d", i)
		cfg := guard.Config{Window: 4 * env.Timeout, OpenFor: env.Timeout, MaxOpenFor: DaemonMaxOpenFor * env.Timeout,
			WaitFloor: guard.DefaultWaitFloor * env.Timeout / guard.DefaultOpenFor, TrialWait: daemonTrialWait(env.Timeout)}
		send := transport.ProbeFunc(env.Base, env.Timeout)
		cfg.Probe = func(ctx context.Context, endpoint string) error {
			if env.Probes != nil {
				env.Probes.Add(1)
			}
			return env.Trace.probe(who, endpoint, func() error { return send(ctx, endpoint) })
		}
		cfg.OnTransition = env.Trace.transitions(who)
		var link guard.Link
		if share {
			if link, err = st.GuardShare(guard.StoreShareParams{Node: fmt.Sprint(i), LeaseFor: 2 * env.Timeout}); err != nil {
				c.Close()
				return nil, err
			}
			c.links = append(c.links, link)
			cfg.Share = link
		}
		g := guard.New(cfg)
		c.guards = append(c.guards, g)
		if link != nil {
			apply := func(t guard.Transition) {
				if t.Change == guard.ChangeOpened && lags != nil {
					lags.add(time.Since(t.At))
				}
				env.Trace.applied(who, t)
				g.Apply(t)
			}
			if err := link.Start(ctx, apply); err != nil {
				c.Close()
				return nil, err
			}
		}
		rt := transport.New(transport.Config{Base: env.Base, Guard: g, HeaderTimeout: env.Timeout, IdleTimeout: env.Timeout})
		c.clients = append(c.clients, &http.Client{Transport: rt})
	}
	return c, nil
}

// Close stops every node and drops the run's schema.
func (c *nodesClient) Close() error {
	for _, g := range c.guards {
		g.Close()
	}
	for _, l := range c.links {
		l.Close()
	}
	for _, s := range c.stores {
		s.Close()
	}
	c.drop()
	return nil
}

func (c *nodesClient) Do(req *http.Request) (*http.Response, error) {
	h := &hostguardClient{c: c.clients[c.next.Add(1)%uint64(len(c.clients))]}
	return h.Do(req)
}
