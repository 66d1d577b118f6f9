package breakers_test

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/hostguard/hostguard/bench/breakers"
	"github.com/sony/gobreaker/v2"
)

func TestGobreakerKeepsOneBreakerPerKey(t *testing.T) {
	t.Parallel()
	reg := breakers.NewGobreaker(gobreaker.Settings{})
	first, second := reg.Breaker("http://a"), reg.Breaker("http://a")
	if first != second {
		t.Fatal("two lookups of one key gave two breakers")
	}
	if reg.Breaker("http://a").Name() != "http://a" {
		t.Fatalf("breaker named %q, want its key", reg.Breaker("http://a").Name())
	}
	for range 6 {
		done, err := reg.Allow("http://a")
		if err != nil {
			t.Fatalf("refused before tripping: %v", err)
		}
		done(refused)
	}
	if _, err := reg.Allow("http://a"); !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("six failures did not open http://a: %v", err)
	}
	done, err := reg.Allow("http://b")
	if err != nil {
		t.Fatalf("a tripped key refused another key: %v", err)
	}
	done(nil)
}

func TestFailsafeKeepsOneBreakerPerKey(t *testing.T) {
	t.Parallel()
	reg := breakers.NewFailsafe(nil)
	first, second := reg.Breaker("http://a"), reg.Breaker("http://a")
	if first != second {
		t.Fatal("two lookups of one key gave two breakers")
	}
	a := reg.Breaker("http://a")
	if !a.TryAcquirePermit() {
		t.Fatal("a new breaker refused")
	}
	a.RecordError(refused)
	if a.TryAcquirePermit() {
		t.Fatal("one failure did not open http://a under failsafe-go's defaults")
	}
	b := reg.Breaker("http://b")
	if !b.TryAcquirePermit() {
		t.Fatal("a tripped key refused another key")
	}
	b.RecordResult(&http.Response{StatusCode: http.StatusOK})
}

func TestRegistriesCreateOnceUnderRace(t *testing.T) {
	t.Parallel()
	gb := breakers.NewGobreaker(gobreaker.Settings{})
	fs := breakers.NewFailsafe(nil)
	const workers = 16
	gotGB := make([]*gobreaker.TwoStepCircuitBreaker[struct{}], workers)
	gotFS := make([]any, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			gotGB[i] = gb.Breaker("http://race")
			gotFS[i] = fs.Breaker("http://race")
		})
	}
	wg.Wait()
	for i := 1; i < workers; i++ {
		if gotGB[i] != gotGB[0] || gotFS[i] != gotFS[0] {
			t.Fatalf("goroutine %d got a different breaker for one key", i)
		}
	}
}
