package guard

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// DisableEnv is the environment variable the default kill switch reads: "1"
// or "true" (any case) disables the guard.
const DisableEnv = "HOSTGUARD_DISABLE_GUARD"

// Config tunes a Guard. The zero value is the documented default for every
// field.
type Config struct {
	// Threshold is how many counted host-level failures within Window
	// open an endpoint. Zero means 2.
	Threshold int

	// Window bounds a streak: failures count together only while they lie
	// within Window of each other, both ends included. A failure more than
	// Window after the earlier ones starts a new streak at 1. Zero means
	// 120s.
	Window time.Duration

	// OpenFor is how long an open endpoint fails fast before it admits one
	// trial. Zero means 30s.
	OpenFor time.Duration

	// MaxEndpoints caps the records the guard keeps. Zero means 4096.
	MaxEndpoints int

	// IdleTTL is how long a closed record with no tickets out may sit
	// unused before it is pruned. Zero means 10m.
	IdleTTL time.Duration

	// Now is the clock. It is called with an endpoint's lock held, so it
	// must not call back into the Guard. Nil means time.Now.
	Now func() time.Time

	// Disabled is the kill switch, called on every Acquire, AcquireExempt
	// and Failed; while it reports true the guard refuses nothing and
	// records no failures. Nil reads the HOSTGUARD_DISABLE_GUARD
	// environment variable on every call ("1" or "true", any case).
	Disabled func() bool

	// OnTransition, if set, is called once for every state change of an
	// endpoint (for example to write one log line), on the goroutine that
	// caused or first observed it and never with a lock held. Calls for
	// one endpoint racing on different goroutines may arrive out of order.
	// Open to half-open happens with the passing of time; it is reported
	// by the first call that observes it. Nil means no calls.
	OnTransition func(endpoint string, from, to State)
}

// Validate reports the first field that holds a value New cannot use.
func (c Config) Validate() error {
	switch {
	case c.Threshold < 0:
		return fmt.Errorf("guard: Config.Threshold is %d; want 0 (default 2) or more", c.Threshold)
	case c.Window < 0:
		return fmt.Errorf("guard: Config.Window is %v; want 0 (default 120s) or more", c.Window)
	case c.OpenFor < 0:
		return fmt.Errorf("guard: Config.OpenFor is %v; want 0 (default 30s) or more", c.OpenFor)
	case c.MaxEndpoints < 0:
		return fmt.Errorf("guard: Config.MaxEndpoints is %d; want 0 (default 4096) or more", c.MaxEndpoints)
	case c.IdleTTL < 0:
		return fmt.Errorf("guard: Config.IdleTTL is %v; want 0 (default 10m) or more", c.IdleTTL)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Threshold == 0 {
		c.Threshold = 2
	}
	if c.Window == 0 {
		c.Window = 120 * time.Second
	}
	if c.OpenFor == 0 {
		c.OpenFor = 30 * time.Second
	}
	if c.MaxEndpoints == 0 {
		c.MaxEndpoints = 4096
	}
	if c.IdleTTL == 0 {
		c.IdleTTL = 10 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Disabled == nil {
		c.Disabled = disabledByEnv
	}
	return c
}

func disabledByEnv() bool {
	v := os.Getenv(DisableEnv)
	return v == "1" || strings.EqualFold(v, "true")
}
