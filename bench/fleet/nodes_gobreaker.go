package fleet

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/sony/gobreaker/v2"
)

// GobreakerNodesPolicy is gobreaker's DistributedCircuitBreaker on n
// nodes, each with its own breakers and HTTP client, all over one shared
// store in memory (the cheapest store it can have: a blocking lock, where
// Redis's would be tried again every 500 ms), with the settings of the
// gobreaker policy. Requests go to the nodes in turn, as for
// NodesPolicy. Its Execute holds the store's lock on an endpoint while
// the request runs, so calls to one host wait for each other across the
// cluster: that is the design being measured, not an artefact of the
// store.
func GobreakerNodesPolicy(n int) Policy {
	return Policy{
		Name: fmt.Sprintf("gobreaker-nodes%d", n),
		Note: fmt.Sprintf("gobreaker's DistributedCircuitBreaker, settings as gobreaker, on %d nodes over one in-memory store; requests to the nodes in turn", n),
		New: func(env Env) Client {
			store := newGobreakerStore()
			c := &gobreakerNodes{}
			for range n {
				c.nodes = append(c.nodes, &gobreakerNode{c: plainClient(env), store: store,
					settings: gobreaker.Settings{Timeout: 2 * env.Timeout}})
			}
			return c
		},
	}
}

type gobreakerNodes struct {
	next  atomic.Uint64
	nodes []*gobreakerNode
}

func (c *gobreakerNodes) Do(req *http.Request) (*http.Response, error) {
	return c.nodes[c.next.Add(1)%uint64(len(c.nodes))].Do(req)
}

// gobreakerNode is one node: a breaker per origin, made on first use.
type gobreakerNode struct {
	c        *http.Client
	store    *gobreakerStore
	settings gobreaker.Settings
	m        sync.Map // origin -> *gobreaker.DistributedCircuitBreaker[*http.Response]
}

func (g *gobreakerNode) breaker(key string) (*gobreaker.DistributedCircuitBreaker[*http.Response], error) {
	if cb, ok := g.m.Load(key); ok {
		return cb.(*gobreaker.DistributedCircuitBreaker[*http.Response]), nil
	}
	st := g.settings
	st.Name = key
	cb, err := gobreaker.NewDistributedCircuitBreaker[*http.Response](g.store, st)
	if err != nil {
		return nil, err
	}
	got, _ := g.m.LoadOrStore(key, cb)
	return got.(*gobreaker.DistributedCircuitBreaker[*http.Response]), nil
}

func (g *gobreakerNode) Do(req *http.Request) (*http.Response, error) {
	cb, err := g.breaker(origin(req))
	if err != nil {
		return nil, err
	}
	resp, err := cb.Execute(func() (*http.Response, error) { return g.c.Do(req) })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return resp, err
}

// gobreakerStore is gobreaker's SharedDataStore in memory, as
// bench/breakers measures its per-call cost over.
type gobreakerStore struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
	data  map[string][]byte
}

func newGobreakerStore() *gobreakerStore {
	return &gobreakerStore{locks: map[string]*sync.Mutex{}, data: map[string][]byte{}}
}

func (s *gobreakerStore) lock(name string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.locks[name]
	if !ok {
		l = new(sync.Mutex)
		s.locks[name] = l
	}
	return l
}

func (s *gobreakerStore) Lock(name string) error   { s.lock(name).Lock(); return nil }
func (s *gobreakerStore) Unlock(name string) error { s.lock(name).Unlock(); return nil }

func (s *gobreakerStore) GetData(name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[name], nil
}

func (s *gobreakerStore) SetData(name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[name] = append([]byte(nil), data...)
	return nil
}
