package retry

import (
	"math"
	"time"
)

// delay is the wait after a failure of class, with jitter applied: the
// ladder step times a factor drawn uniformly from [1-Jitter, 1+Jitter).
// The step is the failures in a row so far, or, for a class that
// escalates by sources, the distinct sources of its evidence; beyond the
// ladder's end its last step repeats.
func (s *Scheduler) delay(class string, failures, sources int) time.Duration {
	ladder, n := s.cfg.Default, failures
	if cc, ok := s.cfg.Classes[class]; ok {
		ladder = cc.Ladder
		if cc.Escalate == BySources {
			n = sources
		}
	}
	step := min(max(n, 1), len(ladder)) - 1
	d := ladder[step]
	if s.cfg.Jitter > 0 {
		f := 1 + s.cfg.Jitter*(2*s.cfg.Rand()-1)
		d = time.Duration(math.Round(float64(d) * f))
	}
	// Stores keep microseconds; a sub-microsecond remainder would make the
	// value read back differ from the one decided here.
	return max(d.Truncate(time.Microsecond), time.Microsecond)
}

// retryQuota is the most scheduled items a claim of n may take while
// pending items are due: RetryShare×n rounded down or up at random, up with
// the probability of the fractional part. Randomised rounding keeps the
// long-run share exact even for claims of one item, where always rounding
// down would starve retries and always rounding up would ignore the cap.
func (s *Scheduler) retryQuota(n int) int {
	x := s.cfg.RetryShare * float64(n)
	q := math.Floor(x)
	if frac := x - q; frac > 1e-9 && s.cfg.Rand() < frac {
		q++
	}
	return min(max(int(q), 0), n)
}
