package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/hostguard/hostguard/bench/breakers"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/transport"
	"github.com/sony/gobreaker/v2"
)

// ErrRefused marks a request that a policy turned away without any network
// work. Every policy's refusals wrap it, whatever its own error is.
var ErrRefused = errors.New("fleet: refused by policy")

// errServer is what the peers are told when a host answers 5xx and the
// policy treats that as a failure.
var errServer = errors.New("fleet: server error status")

// Client sends one request the way a policy does.
type Client interface {
	Do(req *http.Request) (*http.Response, error)
}

// Env is what a policy may use to build its client for one run.
type Env struct {
	// Timeout bounds the wait for response headers (the plan's unit).
	Timeout time.Duration
	// Base is a fresh transport for this run, shared by nothing else.
	Base *http.Transport
	// Up tells the truth about a host ("127.0.0.1:port") right now. Only
	// the oracle may look.
	Up func(hostport string) bool
	// Probes counts the recovery probes a policy sends on its own, which
	// are not requests of the workload.
	Probes *atomic.Int64
	// Trace, if not nil, is where the policy writes what its guards did
	// (see Tracer).
	Trace *Tracer
}

// Policy is one way of deciding whether to contact a host.
type Policy struct {
	Name string
	// Note says how the policy is configured, for the report.
	Note string
	New  func(Env) Client
}

// Policies returns every policy the simulation compares, in report order.
//
// Durations in the peers' defaults are scaled like everything else: a
// real-world client waits 30 s for a portal, so one Timeout stands for 30 s,
// and a 60 s default becomes two Timeouts. Peers see a transport error as a
// failure; the "-5xx" variants also report a 5xx status as a failure, which
// is how a user of those libraries usually wires "the call failed".
func Policies() []Policy {
	return []Policy{
		{Name: "oracle", Note: "knows the schedule: never contacts a down host, never refuses an up one", New: newOracle},
		{Name: "none", Note: "no breaker, client timeout only", New: newPlain},
		{Name: "hostguard", Note: fmt.Sprintf("the daemon's settings: guard defaults scaled (Threshold 2, Window 4T, OpenFor T), probes through transport.ProbeFunc, MaxOpenFor %gT, TrialWait %v scaled like OpenFor's %v", float64(DaemonMaxOpenFor), guard.SuggestedTrialWait, guard.DefaultOpenFor), New: newHostguard(daemon)},
		{Name: "hostguard-failfast", Note: "the daemon's settings without TrialWait: a request that finds the half-open trial out is refused at once (the seed's rule)", New: newHostguard(hgOptions{probe: true, maxOpenFor: DaemonMaxOpenFor})},
		{Name: "hostguard-probeT", Note: "the daemon's settings, but every probe waits the whole T (the wait rule off), as before the probe's wait followed the host's need", New: newHostguard(with(daemon, func(o *hgOptions) { o.fullWait = true }))},
		{Name: "hostguard-trip1", Note: "the daemon's settings with Threshold 1: one fan-out of timeouts trips, the seed's two-fan-out trip rule dropped", New: newHostguard(with(daemon, func(o *hgOptions) { o.threshold = 1 }))},
		{Name: "hostguard-probes", Note: "probes without growth (MaxOpenFor 0)", New: newHostguard(hgOptions{probe: true})},
		{Name: "hostguard-growth", Note: fmt.Sprintf("growth alone (MaxOpenFor %gT), no probes", float64(DaemonMaxOpenFor)), New: newHostguard(hgOptions{maxOpenFor: DaemonMaxOpenFor})},
		{Name: "hostguard-seed", Note: "the seed's rules: no probes, no growth; the first request after the open period is the trial", New: newHostguard(hgOptions{})},
		{Name: "gobreaker", Note: "defaults scaled (trip after >5 consecutive failures, open 2T, 1 half-open request); errors only", New: newGobreaker(false)},
		{Name: "gobreaker-5xx", Note: "as gobreaker, and a 5xx status counts as a failure", New: newGobreaker(true)},
		{Name: "failsafe", Note: "defaults scaled (trip after 1 failure, open 2T, 1 half-open request); errors only", New: newFailsafe(false)},
		{Name: "failsafe-5xx", Note: "as failsafe, and a 5xx status counts as a failure", New: newFailsafe(true)},
	}
}

// HostguardPolicy is hostguard with or without probes and with growth up
// to maxOpenFor × T (0: none), for comparing growth caps.
func HostguardPolicy(probe bool, maxOpenFor time.Duration) Policy {
	name, note := "hostguard-seed", "no probes"
	if probe {
		name, note = "hostguard-probes", "probes"
	}
	if maxOpenFor > 0 {
		name += fmt.Sprintf("-max%dT", maxOpenFor)
		note += fmt.Sprintf(", MaxOpenFor %dT", maxOpenFor)
	}
	return Policy{Name: name, Note: note, New: newHostguard(hgOptions{probe: probe, maxOpenFor: maxOpenFor})}
}

// PolicyNamed returns the policy called name.
func PolicyNamed(name string) (Policy, error) {
	for _, p := range Policies() {
		if p.Name == name {
			return p, nil
		}
	}
	return Policy{}, fmt.Errorf("fleet: no policy named %q", name)
}

func plainClient(env Env) *http.Client {
	return &http.Client{Transport: env.Base, Timeout: env.Timeout}
}

func newPlain(env Env) Client { return plainClient(env) }

type oracle struct {
	c  *http.Client
	up func(string) bool
}

func newOracle(env Env) Client { return &oracle{c: plainClient(env), up: env.Up} }

func (o *oracle) Do(req *http.Request) (*http.Response, error) {
	if !o.up(req.URL.Host) {
		return nil, fmt.Errorf("%w: oracle knows %s is down", ErrRefused, req.URL.Host)
	}
	return o.c.Do(req)
}

// DaemonMaxOpenFor is the growth cap the daemon uses, in units of T
// (OpenFor); see docs/design.md for how it was chosen from these runs.
const DaemonMaxOpenFor = guard.SuggestedMaxOpenFor / guard.DefaultOpenFor

type hostguardClient struct {
	c *http.Client
	g *guard.Guard
}

// hgOptions are the settings of a hostguard policy, in units of T where
// they are durations.
type hgOptions struct {
	probe      bool          // probes through transport.ProbeFunc
	maxOpenFor time.Duration // growth cap × T; 0: no growth
	fullWait   bool          // the wait rule off, so that probes wait the whole T
	threshold  int           // the guard's Threshold; 0: the default
	trialWait  bool          // the daemon's TrialWait, scaled
}

// daemon is the daemon's settings.
var daemon = hgOptions{probe: true, maxOpenFor: DaemonMaxOpenFor, trialWait: true}

func with(o hgOptions, change func(*hgOptions)) hgOptions {
	change(&o)
	return o
}

// daemonTrialWait is the daemon's TrialWait scaled as every other
// duration: OpenFor's 30 s stands for T.
func daemonTrialWait(t time.Duration) time.Duration {
	return guard.SuggestedTrialWait * t / guard.DefaultOpenFor
}

// newHostguard builds hostguard's transport with the scaled defaults and
// the settings of o.
func newHostguard(o hgOptions) func(Env) Client {
	return func(env Env) Client { return newHostguardConfig(env, o) }
}

// newHostguardConfig is newHostguard's client for env.
func newHostguardConfig(env Env, o hgOptions) Client {
	cfg := guard.Config{Threshold: o.threshold, Window: 4 * env.Timeout, OpenFor: env.Timeout, MaxOpenFor: o.maxOpenFor * env.Timeout,
		WaitFloor: guard.DefaultWaitFloor * env.Timeout / guard.DefaultOpenFor}
	if o.fullWait {
		cfg.WaitFloor = -1
	}
	if o.trialWait {
		cfg.TrialWait = daemonTrialWait(env.Timeout)
	}
	if o.probe {
		send := transport.ProbeFunc(env.Base, env.Timeout)
		cfg.Probe = func(ctx context.Context, endpoint string) error {
			if env.Probes != nil {
				env.Probes.Add(1)
			}
			return env.Trace.probe("guard", endpoint, func() error { return send(ctx, endpoint) })
		}
	}
	cfg.OnTransition = env.Trace.transitions("guard")
	g := guard.New(cfg)
	rt := transport.New(transport.Config{Base: env.Base, Guard: g, HeaderTimeout: env.Timeout, IdleTimeout: env.Timeout})
	return &hostguardClient{c: &http.Client{Transport: rt}, g: g}
}

// Close stops the guard's probes.
func (h *hostguardClient) Close() error { return h.g.Close() }

func (h *hostguardClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := h.c.Do(req)
	if errors.Is(err, guard.ErrOpen) {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return resp, err
}

func origin(req *http.Request) string { return req.URL.Scheme + "://" + req.URL.Host }

type gobreakerClient struct {
	c       *http.Client
	hosts   *breakers.Gobreaker
	fail5xx bool
}

func newGobreaker(fail5xx bool) func(Env) Client {
	return func(env Env) Client {
		return &gobreakerClient{
			c:       plainClient(env),
			hosts:   breakers.NewGobreaker(gobreaker.Settings{Timeout: 2 * env.Timeout}),
			fail5xx: fail5xx,
		}
	}
}

func (g *gobreakerClient) Do(req *http.Request) (*http.Response, error) {
	done, err := g.hosts.Allow(origin(req))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	resp, err := g.c.Do(req)
	switch {
	case err != nil:
		done(err)
	case g.fail5xx && resp.StatusCode >= 500:
		done(errServer)
	default:
		done(nil)
	}
	return resp, err
}

type failsafeClient struct {
	c     *http.Client
	hosts *breakers.Failsafe
}

func newFailsafe(fail5xx bool) func(Env) Client {
	return func(env Env) Client {
		build := func() circuitbreaker.CircuitBreaker[*http.Response] {
			b := circuitbreaker.NewBuilder[*http.Response]().WithDelay(2 * env.Timeout)
			if fail5xx {
				b = b.HandleIf(func(resp *http.Response, err error) bool {
					return err != nil || resp != nil && resp.StatusCode >= 500
				})
			}
			return b.Build()
		}
		return &failsafeClient{c: plainClient(env), hosts: breakers.NewFailsafe(build)}
	}
}

func (f *failsafeClient) Do(req *http.Request) (*http.Response, error) {
	cb := f.hosts.Breaker(origin(req))
	if !cb.TryAcquirePermit() {
		return nil, fmt.Errorf("%w: %w", ErrRefused, circuitbreaker.ErrOpen)
	}
	resp, err := f.c.Do(req)
	if err != nil {
		cb.RecordError(err)
	} else {
		cb.RecordResult(resp)
	}
	return resp, err
}
