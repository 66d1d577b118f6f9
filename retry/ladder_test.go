package retry

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestDelayFollowsLadderAndRepeatsLastStep(t *testing.T) {
	s, err := New(nopStore{}, Config{
		Jitter:  -1,
		Classes: map[string]ClassConfig{"no_peers": {Ladder: Ladder{time.Minute, time.Hour}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		class    string
		failures int
		want     time.Duration
	}{
		{"no_peers", 1, time.Minute},
		{"no_peers", 2, time.Hour},
		{"no_peers", 9, time.Hour},
		{"other", 1, 30 * time.Minute},
		{"other", 2, 2 * time.Hour},
		{"other", 3, 8 * time.Hour},
		{"other", 4, 24 * time.Hour},
		{"other", 5, 7 * 24 * time.Hour},
		{"other", 6, 30 * 24 * time.Hour},
		{"other", 60, 30 * 24 * time.Hour},
		{"other", 0, 30 * time.Minute}, // defensive: never before the first step
	}
	for _, st := range steps {
		if got := s.delay(st.class, st.failures, 0); got != st.want {
			t.Errorf("delay(%s, %d) = %v, want %v", st.class, st.failures, got, st.want)
		}
	}
}

func TestJitterStaysInBandAndSpreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s, err := New(nopStore{}, Config{Rand: rng.Float64})
	if err != nil {
		t.Fatal(err)
	}
	base := float64(30 * time.Minute)
	lo, hi := math.Inf(1), math.Inf(-1)
	seen := map[time.Duration]bool{}
	for range 10_000 {
		d := s.delay("x", 1, 0)
		f := float64(d) / base
		lo, hi = math.Min(lo, f), math.Max(hi, f)
		seen[d] = true
	}
	if lo < 0.9 || hi >= 1.1 {
		t.Fatalf("jitter factor range [%v, %v] leaves ±10%%", lo, hi)
	}
	if lo > 0.901 || hi < 1.099 || len(seen) < 9_900 {
		t.Fatalf("jitter does not spread: range [%v, %v], %d distinct delays of 10000", lo, hi, len(seen))
	}
	// The extremes of the random source map to the edges of the band.
	for _, u := range []float64{0, 0.999999} {
		s.cfg.Rand = func() float64 { return u }
		f := float64(s.delay("x", 1, 0)) / base
		if math.Abs(f-(1+0.1*(2*u-1))) > 1e-6 {
			t.Errorf("rand %v gives factor %v", u, f)
		}
	}
}

func TestRetryQuotaRoundsAtRandomToTheExactShare(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s, err := New(nopStore{}, Config{Rand: rng.Float64})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 7, 10} {
		total := 0
		const rounds = 20_000
		for range rounds {
			q := s.retryQuota(n)
			lo := int(math.Floor(0.3 * float64(n)))
			if q != lo && q != lo+1 {
				t.Fatalf("quota(%d) = %d, want %d or %d", n, q, lo, lo+1)
			}
			total += q
		}
		mean := float64(total) / rounds
		if math.Abs(mean-0.3*float64(n)) > 0.02*float64(n)+0.01 {
			t.Errorf("mean quota for %d is %.3f, want about %.3f", n, mean, 0.3*float64(n))
		}
	}
	s.cfg.RetryShare = 1
	if q := s.retryQuota(7); q != 7 {
		t.Errorf("share 1: quota %d, want 7", q)
	}
}
