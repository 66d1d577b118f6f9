package breakers_test

import (
	"sync"
	"testing"

	"github.com/hostguard/hostguard/guard"
	"github.com/sony/gobreaker/v2"
)

// memStore is gobreaker's SharedDataStore in memory: the cheapest store
// its distributed breaker can have, so what it costs per call below is
// the breaker's own protocol (a lock, a read and a write of the shared
// state around every call), before any network time.
type memStore struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
	data  map[string][]byte
}

func newMemStore() *memStore {
	return &memStore{locks: map[string]*sync.Mutex{}, data: map[string][]byte{}}
}

func (s *memStore) lock(name string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.locks[name]
	if !ok {
		l = new(sync.Mutex)
		s.locks[name] = l
	}
	return l
}

func (s *memStore) Lock(name string) error   { s.lock(name).Lock(); return nil }
func (s *memStore) Unlock(name string) error { s.lock(name).Unlock(); return nil }

func (s *memStore) GetData(name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[name], nil
}

func (s *memStore) SetData(name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[name] = append([]byte(nil), data...)
	return nil
}

// BenchmarkSharedClosed is one admitted call on a healthy endpoint with
// the breaker's state shared between processes: gobreaker's
// DistributedCircuitBreaker over the in-memory store, against hostguard
// with a Sharer and a Claimer (which the closed path never calls).
func BenchmarkSharedClosed(b *testing.B) {
	b.Run("lib=gobreaker-distributed", func(b *testing.B) {
		cb, err := gobreaker.NewDistributedCircuitBreaker[int](newMemStore(), gobreaker.Settings{Name: "http://10.0.0.0:8080"})
		if err != nil {
			b.Fatal(err)
		}
		ok := func() (int, error) { return 1, nil }
		b.ReportAllocs()
		start := cpuTime(b)
		for b.Loop() {
			if _, err := cb.Execute(ok); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start)
	})
	b.Run("lib=hostguard-share", func(b *testing.B) {
		call := hostguardClosed(guard.Config{Share: &shareCounter})(b, 1)
		b.ReportAllocs()
		start := cpuTime(b)
		for b.Loop() {
			call(0)
		}
		reportCPU(b, start)
	})
}
