package fleet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// Mix is how many hosts of each kind a fleet has.
type Mix struct {
	Healthy, Dead, Refused, Flapping, Slow, ServerError int
}

// DefaultMix is a fleet where most hosts work and a third misbehave in one
// way or another, as in a list of third-party portals collected over time.
var DefaultMix = Mix{Healthy: 14, Dead: 2, Refused: 2, Flapping: 6, Slow: 3, ServerError: 3}

func (m Mix) total() int { return m.Healthy + m.Dead + m.Refused + m.Flapping + m.Slow + m.ServerError }

// Config describes a simulation. Every duration in a plan is a multiple of
// Timeout, so shrinking it shrinks the whole run and keeps its shape.
type Config struct {
	// Seed makes the plan reproducible; 0 means 1.
	Seed uint64
	// Timeout is how long a client waits for response headers, and the
	// unit of every other duration; 0 means 300 ms, minimum 10 ms.
	Timeout time.Duration
	// Mix is the fleet; the zero Mix means DefaultMix. Counts may be zero
	// but not negative, and at least one host is needed.
	Mix Mix
	// Workers is how many clients browse at once; 0 means 8.
	Workers int
	// Sessions is how many catalogue sessions each worker runs; 0 means 30.
	Sessions int
	// Limit is the longest a run may take before it is abandoned, and how
	// far ahead schedules are drawn; 0 means 60 s.
	Limit time.Duration
	// Impatient is the share of workers (0 to 1, rounded to whole
	// workers) whose clients give up after Patience, before a slow host
	// answers: players and add-ons with short timeouts of their own. 0
	// means none; the rest wait the policy's Timeout.
	Impatient float64
	// Patience is how long an impatient worker waits for headers (its
	// request's context deadline); 0 means Timeout/2, above the hostguard
	// policy's wait floor and below a slow host's 3/4 Timeout.
	Patience time.Duration
}

// Session is one worker browsing one host's catalogue: fan-outs one after
// another, each a burst of parallel requests.
type Session struct {
	Host    int   // index into Plan.Hosts
	FanOuts []int // width of each fan-out
}

// Plan is a seeded fleet and workload: every policy runs the same plan.
type Plan struct {
	Config  Config // with defaults filled in
	Hosts   []HostSpec
	Workers [][]Session
	// Patience is each worker's own deadline per request; 0 (or a nil
	// slice) means none, the policy's Timeout alone.
	Patience []time.Duration
}

func (c Config) withDefaults() Config {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Timeout == 0 {
		c.Timeout = 300 * time.Millisecond
	}
	if c.Mix == (Mix{}) {
		c.Mix = DefaultMix
	}
	if c.Workers == 0 {
		c.Workers = 8
	}
	if c.Sessions == 0 {
		c.Sessions = 30
	}
	if c.Limit == 0 {
		c.Limit = time.Minute
	}
	if c.Patience == 0 {
		c.Patience = c.Timeout / 2
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Timeout < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("fleet: Timeout %v is below the 10ms minimum", c.Timeout))
	}
	m := c.Mix
	for _, f := range []struct {
		name string
		n    int
	}{{"Healthy", m.Healthy}, {"Dead", m.Dead}, {"Refused", m.Refused}, {"Flapping", m.Flapping}, {"Slow", m.Slow}, {"ServerError", m.ServerError}} {
		if f.n < 0 {
			errs = append(errs, fmt.Errorf("fleet: Mix.%s is %d, must not be negative", f.name, f.n))
		}
	}
	if m.total() > 1000 {
		errs = append(errs, fmt.Errorf("fleet: Mix has %d hosts, at most 1000", m.total()))
	}
	if c.Workers < 1 || c.Workers > 1000 {
		errs = append(errs, fmt.Errorf("fleet: Workers is %d, want 1..1000", c.Workers))
	}
	if c.Sessions < 1 || c.Sessions > 100_000 {
		errs = append(errs, fmt.Errorf("fleet: Sessions is %d, want 1..100000", c.Sessions))
	}
	if c.Impatient < 0 || c.Impatient > 1 {
		errs = append(errs, fmt.Errorf("fleet: Impatient is %v, want 0..1", c.Impatient))
	}
	if c.Patience < 0 || c.Patience > c.Timeout {
		errs = append(errs, fmt.Errorf("fleet: Patience %v is not within 0..Timeout %v", c.Patience, c.Timeout))
	}
	if c.Limit < c.Timeout {
		errs = append(errs, fmt.Errorf("fleet: Limit %v is shorter than Timeout %v", c.Limit, c.Timeout))
	}
	return errors.Join(errs...)
}

// NewPlan draws a fleet and a workload from cfg. The same cfg always gives
// the same plan.
func NewPlan(cfg Config) (*Plan, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Mix.total() == 0 {
		return nil, errors.New("fleet: Mix has no hosts")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))
	t := cfg.Timeout
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }

	p := &Plan{Config: cfg}
	add := func(n int, spec func() HostSpec) {
		for range n {
			p.Hosts = append(p.Hosts, spec())
		}
	}
	m := cfg.Mix
	add(m.Healthy, func() HostSpec {
		return HostSpec{Kind: Healthy, Latency: between(t/60, t/15), Status: http.StatusOK}
	})
	add(m.Dead, func() HostSpec {
		return HostSpec{Kind: Dead, Schedule: Schedule{{From: 0, To: Forever, Hang: true}}}
	})
	add(m.Refused, func() HostSpec {
		return HostSpec{Kind: Refused, Schedule: Schedule{{From: 0, To: Forever}}}
	})
	add(m.Flapping, func() HostSpec {
		return HostSpec{Kind: Flapping, Latency: between(t/60, t/15), Status: http.StatusOK, Schedule: flaps(rng, t, cfg.Limit)}
	})
	add(m.Slow, func() HostSpec {
		// Three quarters of the timeout: slow enough to hurt, with room
		// for scheduling noise on a busy machine before it would time out.
		return HostSpec{Kind: Slow, Latency: t * 3 / 4, Status: http.StatusOK}
	})
	add(m.ServerError, func() HostSpec {
		return HostSpec{Kind: ServerError, Latency: between(t/150, t/30), Status: []int{500, 502, 503}[rng.IntN(3)]}
	})

	p.Workers = make([][]Session, cfg.Workers)
	for w := range p.Workers {
		p.Workers[w] = make([]Session, cfg.Sessions)
		for s := range p.Workers[w] {
			fan := make([]int, 2+rng.IntN(5)) // 2..6 fan-outs
			for i := range fan {
				fan[i] = 3 + rng.IntN(8) // 3..10 parallel requests
			}
			p.Workers[w][s] = Session{Host: rng.IntN(len(p.Hosts)), FanOuts: fan}
		}
	}
	// Spread impatient workers among the rest rather than first, drawn
	// after the workload so that a plan's sessions do not depend on it.
	p.Patience = make([]time.Duration, cfg.Workers)
	for _, w := range rng.Perm(cfg.Workers)[:int(cfg.Impatient*float64(cfg.Workers)+0.5)] {
		p.Patience[w] = cfg.Patience
	}
	return p, nil
}

// flaps draws a flapping host's outages up to limit: up for 2..10 timeouts
// at first, then alternately down for 3..10 and up for 6..16; each outage
// either hangs or refuses.
func flaps(rng *rand.Rand, t, limit time.Duration) Schedule {
	between := func(lo, hi int64) time.Duration {
		return t*time.Duration(lo) + time.Duration(rng.Int64N(int64(t)*(hi-lo)+1))
	}
	var s Schedule
	at := between(2, 10)
	for at < limit {
		down := between(3, 10)
		s = append(s, Outage{From: at, To: at + down, Hang: rng.IntN(2) == 0})
		at += down + between(6, 16)
	}
	return s
}

// Requests is the total number of requests in the plan's workload.
func (p *Plan) Requests() int {
	n := 0
	for _, sessions := range p.Workers {
		for _, s := range sessions {
			for _, k := range s.FanOuts {
				n += k
			}
		}
	}
	return n
}
