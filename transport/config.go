package transport

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// The defaults a zero Config field takes.
const (
	DefaultHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout   = 30 * time.Second

	// DefaultTimeout is the value both timeouts default to; the two
	// names above say which one a caller means.
	DefaultTimeout = DefaultHeaderTimeout
)

// ErrInvalid is matched by every *InputError.
var ErrInvalid = errors.New("transport: invalid input")

// InputError reports a configuration value the transport cannot use. Field
// is the snake_case name of the setting as the daemon's configuration file
// spells it (header_timeout, idle_timeout).
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return "transport: " + e.Reason
	}
	return "transport: " + e.Field + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }

// Config configures a Transport. The zero value is ready to use.
type Config struct {
	// Base sends the requests. nil means a clone of http.DefaultTransport.
	// It must stop a request, and a body read, when the request's context
	// is cancelled; http.Transport does.
	Base http.RoundTripper

	// Guard decides which endpoints may be contacted. nil means a guard of
	// its own with guard.Config defaults, whose transitions go to Logger.
	// A caller that supplies a guard also owns its logging, through
	// guard.Config.OnTransition.
	Guard *guard.Guard

	// HeaderTimeout bounds connecting, and then the wait for response
	// headers from the moment the host has the whole request, per hop:
	// sending a request body is the caller's time. Expiry counts as the
	// host not answering, whatever its length: it is the operator's own
	// bound, not a caller's give-up (see guard.WaitError). Zero means DefaultHeaderTimeout
	// (30s); negative is invalid, because a guard keyed on "the host did
	// not answer" is only useful once not answering is bounded.
	HeaderTimeout time.Duration

	// IdleTimeout bounds how long one body read may wait for data; every
	// read that makes progress starts it again, so total transfer time is
	// never bounded. Expiry does not count against the host. Zero means
	// DefaultIdleTimeout (30s); negative is invalid.
	IdleTimeout time.Duration

	// Probe makes the guard New creates when Guard is nil check an
	// endpoint itself when its open period ends, if it was asked for
	// during it, with ProbeFunc(Base, HeaderTimeout), so that no caller's
	// request has to be the half-open trial (see guard.Config.Probe).
	// Close stops its probes. It is unused when Guard is set: that
	// guard's own Config decides. false means no probes.
	Probe bool

	// Budget admits the requests whose context carries an admission
	// (WithAdmission) before the guard is asked; *budget.Budget
	// implements it. nil (the zero value): no admission, requests carrying
	// one go out unadmitted.
	Budget Budget

	// Logger receives one line per state transition of the guard New
	// creates when Guard is nil, and a line when a bytes reservation
	// cannot be settled. nil means slog.Default(). Lines name the endpoint
	// (an origin) and nothing else of the URL.
	Logger *slog.Logger
}

// Validate reports the first field New cannot use, as an *InputError. New
// panics on exactly the configurations Validate rejects and on no other.
func (c Config) Validate() error {
	switch {
	case c.HeaderTimeout < 0:
		return &InputError{Field: "header_timeout",
			Reason: fmt.Sprintf("is negative (%v); want 0 (default %v) or more", c.HeaderTimeout, DefaultHeaderTimeout)}
	case c.IdleTimeout < 0:
		return &InputError{Field: "idle_timeout",
			Reason: fmt.Sprintf("is negative (%v); want 0 (default %v) or more", c.IdleTimeout, DefaultIdleTimeout)}
	}
	return nil
}
