package guard

import (
	"context"
	"strings"
	"syscall"
	"time"
)

// DisableEnv is the environment variable the default kill switch reads: "1"
// or "true" (any case) disables the guard.
const DisableEnv = "HOSTGUARD_DISABLE_GUARD"

// The defaults a zero Config field takes. They are the seed's rules: two
// failures within two minutes open an endpoint for thirty seconds.
const (
	DefaultThreshold    = 2
	DefaultWindow       = 120 * time.Second
	DefaultOpenFor      = 30 * time.Second
	DefaultMaxOpenFor   = 0 // no growth
	DefaultMaxEndpoints = 4096
	DefaultIdleTTL      = 10 * time.Minute
	DefaultMaxProbes    = 64
)

// SuggestedMaxOpenFor is a growth cap for programs that probe, measured
// with the fleet simulation (docs/design.md, "guard: probes and growth"):
// four open periods of the default length. The library's default stays no
// growth, the seed's rule; hostguard's daemon uses this one.
const SuggestedMaxOpenFor = 4 * DefaultOpenFor

// SuggestedTrialWait is a TrialWait for programs whose callers would
// rather wait a moment for a recovering host than be refused: two
// seconds, so that a caller with a timeout of a few seconds still hears a
// refusal before it gives up. The library's default stays no wait, the
// seed's rule; hostguard's daemon uses this one.
const SuggestedTrialWait = 2 * time.Second

// Config tunes a Guard. The zero value is the documented default for every
// field.
type Config struct {
	// Threshold is how many counted host-level failures within Window
	// open an endpoint. Zero means DefaultThreshold (2); negative is
	// invalid.
	Threshold int

	// Window bounds a streak: failures count together only while they lie
	// within Window of each other, both ends included. A failure more than
	// Window after the earlier ones starts a new streak at 1. Zero means
	// DefaultWindow (120s); negative is invalid.
	Window time.Duration

	// OpenFor is how long an open endpoint fails fast before it admits one
	// trial. Zero means DefaultOpenFor (30s); negative is invalid.
	OpenFor time.Duration

	// MaxOpenFor lets open periods grow while a host stays down: the n-th
	// opening in a row without an answer in between lasts
	// min(n × OpenFor, MaxOpenFor), and every opening after the first is
	// lengthened by a spread of up to 10 %, different per endpoint, so
	// that endpoints that opened together are not tried together again.
	// Any answer, and Reset, start again at OpenFor. Zero means
	// DefaultMaxOpenFor, which is no growth: every opening lasts OpenFor,
	// as does any MaxOpenFor not above OpenFor; negative means no growth
	// as well.
	MaxOpenFor time.Duration

	// MaxEndpoints caps the records the guard keeps. Zero means
	// DefaultMaxEndpoints (4096); negative is invalid, since a guard
	// without a bound on its memory is not on offer.
	MaxEndpoints int

	// IdleTTL is how long a closed record with no tickets out may sit
	// unused before it is pruned. Zero means DefaultIdleTTL (10m);
	// negative is invalid.
	IdleTTL time.Duration

	// Probe, if set, checks an endpoint on the guard's behalf when its
	// open period ends, so that no caller's request has to be the
	// half-open trial while the host may still be down. It is called only
	// for an endpoint that was asked for during the open period (at least
	// one Acquire refused then, or while the failed trial that began the
	// period was out), from a goroutine of the guard's own, as that
	// endpoint's one trial: every Acquire keeps failing fast, with
	// RetryAfter 0, until it returns. nil means the host answered and
	// closes the endpoint; a host-level error (see failure.Classify) opens
	// it again; any other error frees the slot, so that the next Acquire
	// becomes an ordinary trial. ctx is cancelled when the probe is no
	// longer wanted (a Reset, an answer from elsewhere, Close); Probe must
	// return soon after. transport.ProbeFunc builds one. Nil means no
	// probes: the first Acquire after the open period is the trial.
	Probe func(ctx context.Context, endpoint string) error

	// MaxProbes bounds the probes running at once across all endpoints;
	// an endpoint whose open period ends while the bound is reached is
	// not probed, and its next Acquire is the trial. Zero means
	// DefaultMaxProbes (64); negative means no probes at all, as if Probe
	// were nil.
	MaxProbes int

	// WaitFloor is the wait rule's floor: a caller that stopped waiting
	// (a *WaitError: its own timeout or deadline, or going away) is
	// evidence against the endpoint only once the endpoint had owed its
	// answer for longer than WaitFloor, and longer than WaitFactor times
	// what it recently needed to answer (Ticket.AnsweredAfter); shorter
	// waits are inconclusive whatever the caller asked for. Zero means
	// DefaultWaitFloor (1s). Negative turns the rule off: a *WaitError
	// is then what its Err says, so a caller's deadline counts as a
	// timeout whatever its length and a caller that went away never
	// counts.
	WaitFloor time.Duration

	// TrialWait lets a caller that finds the endpoint's one half-open
	// trial out (a caller's, or a probe) wait for its outcome instead of
	// failing fast at once: when the trial answers, the caller goes out
	// as on any closed endpoint; when it fails, the caller is refused
	// with the open period that follows. The wait is what the endpoint
	// needs to answer (WaitFactor times its recent need, and a quarter
	// more: a probe's wait without WaitFloor), at most TrialWait, and
	// AcquireContext's context can end or shorten it. An endpoint never
	// seen answering gets none, nor does a caller during an open period
	// but for a check's outcome (see startCheck in probe.go). A caller
	// has one such wait per Acquire: if the trial ends without a
	// report and another caller takes the slot, it waits on for that
	// trial within what is left. One trial at a time still holds: the
	// waiting callers send nothing until the trial settled. Zero or
	// negative means no wait, the seed's rule (RetryAfter 0 at once);
	// SuggestedTrialWait is the daemon's.
	TrialWait time.Duration

	// Now is the clock. It is called with an endpoint's lock held, so it
	// must not call back into the Guard. Nil means time.Now.
	Now func() time.Time

	// Disabled is the kill switch, called on every Acquire, AcquireExempt
	// and Failed; while it reports true the guard refuses nothing and
	// records no failures. Switching it off again resets nothing: the
	// evidence from before still stands (ResetAll clears it). Nil reads
	// the HOSTGUARD_DISABLE_GUARD environment variable on every call ("1"
	// or "true", any case): the switch is for an operator in trouble, who
	// must not need a restart for it to take effect. A program that
	// wants no environment lookup on the fast-fail sets a function of its
	// own, such as the Load of an atomic.Bool.
	Disabled func() bool

	// OnTransition, if set, is called once for every state change of an
	// endpoint (for example to write one log line), on the goroutine that
	// caused or first observed it and never with a lock held. Calls for
	// one endpoint racing on different goroutines may arrive out of order.
	// Open to half-open happens with the passing of time; it is reported
	// by the first call that observes it. Nil means no calls.
	OnTransition func(endpoint string, from, to State)

	// Share, if set, carries this guard's transitions to other guards
	// (other processes on one database) and theirs to it; see Sharer.
	// The guard publishes an opening, an answer that closes an open
	// endpoint, and every Reset and ResetAll, never anything per request.
	// An opening is published only while the guard's own network
	// evidently works: some other endpoint answered within the last 30 s.
	// When an open period ends a Sharer that is also a Claimer is asked
	// for the cluster's lease before the guard admits a trial or starts a
	// probe, and the guard fails fast with RetryAfter 0 meanwhile and
	// while another guard holds it. Transitions from other
	// guards come in through Apply. A guard with a Sharer runs a timer
	// that notes the time every 250 ms, so that answers are dated
	// without reading the clock; Close stops it. Nil means nothing is
	// shared.
	Share Sharer
}

// Validate reports the first field that holds a value New cannot use, as
// an *InputError whose Field is the setting's snake_case name (threshold,
// window, open_for, max_endpoints, idle_ttl). New panics on exactly the
// configurations Validate rejects and on no other.
func (c Config) Validate() error {
	switch {
	case c.Threshold < 0:
		return invalidf("threshold", "is %d; want 0 (default %d) or more", c.Threshold, DefaultThreshold)
	case c.Window < 0:
		return invalidf("window", "is %v; want 0 (default %v) or more", c.Window, DefaultWindow)
	case c.OpenFor < 0:
		return invalidf("open_for", "is %v; want 0 (default %v) or more", c.OpenFor, DefaultOpenFor)
	case c.MaxEndpoints < 0:
		return invalidf("max_endpoints", "is %d; want 0 (default %d) or more", c.MaxEndpoints, DefaultMaxEndpoints)
	case c.IdleTTL < 0:
		return invalidf("idle_ttl", "is %v; want 0 (default %v) or more", c.IdleTTL, DefaultIdleTTL)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.OpenFor == 0 {
		c.OpenFor = DefaultOpenFor
	}
	if c.MaxEndpoints == 0 {
		c.MaxEndpoints = DefaultMaxEndpoints
	}
	if c.IdleTTL == 0 {
		c.IdleTTL = DefaultIdleTTL
	}
	if c.WaitFloor == 0 {
		c.WaitFloor = DefaultWaitFloor
	}
	if c.MaxProbes == 0 {
		c.MaxProbes = DefaultMaxProbes
	}
	if c.MaxProbes < 0 {
		c.Probe = nil
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Disabled == nil {
		c.Disabled = DisabledByEnv
	}
	return c
}

// DisabledByEnv reports whether the HOSTGUARD_DISABLE_GUARD environment
// variable asks for the guard to be off ("1" or "true", any case). It is
// the kill switch of a Config with a nil Disabled, asked on every call. It
// looks the variable up through syscall.Getenv, the lookup os.Getenv makes
// after telling the test framework's cache which variables a test read: in
// a program that step does nothing, and in a benchmark it would be
// measured.
func DisabledByEnv() bool {
	v, _ := syscall.Getenv(DisableEnv)
	return v == "1" || len(v) == 4 && strings.EqualFold(v, "true")
}

// disabled calls the kill switch.
func (g *Guard) disabled() bool {
	return g.cfg.Disabled()
}
