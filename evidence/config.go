package evidence

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults for the zero fields of Config.
const (
	DefaultTTL            = 6 * time.Hour
	DefaultNegativeTTL    = 24 * time.Hour
	DefaultMaxRows        = 60000
	DefaultMaxAge         = 15 * time.Second
	DefaultRefreshTimeout = 30 * time.Second
	DefaultRefreshRetry   = time.Second
	// maxKeyLen bounds source, subject and fingerprint strings, so that a
	// runaway caller cannot fill the table with megabyte keys.
	maxKeyLen = 1024
	// trimBatch is how many rows one Record may delete to keep the cap.
	trimBatch = 8
	// pruneBatch is how many rows one Prune statement deletes.
	pruneBatch = 500
)

// Config tunes a Book. The zero value is ready to use.
type Config struct {
	// Fingerprint is the current policy fingerprint (see Fingerprint).
	// Verdicts are recorded and read under it. Default "": one unnamed
	// policy, for callers whose settings never change what a check means.
	Fingerprint string
	// TTL is how long an Available verdict counts. Default (zero) 6 h.
	TTL time.Duration
	// NegativeTTL is how long an Unavailable verdict counts; after it, the
	// subject reads as Unknown until checked again. Default (zero) 24 h.
	NegativeTTL time.Duration
	// MaxRows caps the verdict table; the oldest rows are pruned first.
	// Default (zero) 60 000.
	MaxRows int
	// MaxAge is how old a snapshot may get before a reader triggers a
	// background refresh. Default (zero) 15 s.
	MaxAge time.Duration
	// RefreshTimeout bounds one background snapshot refresh. Default (zero)
	// 30 s.
	RefreshTimeout time.Duration
	// RefreshRetry is how long a failed refresh waits before readers may
	// trigger the next one, so that a down database is not hammered by
	// every reader. Default (zero) 1 s.
	RefreshRetry time.Duration
	// Now is the clock. Default (nil) time.Now.
	Now func() time.Time
	// Logger receives one line per failed background refresh. Default
	// (nil) slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.NegativeTTL == 0 {
		c.NegativeTTL = DefaultNegativeTTL
	}
	if c.MaxRows == 0 {
		c.MaxRows = DefaultMaxRows
	}
	if c.MaxAge == 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.RefreshTimeout == 0 {
		c.RefreshTimeout = DefaultRefreshTimeout
	}
	if c.RefreshRetry == 0 {
		c.RefreshRetry = DefaultRefreshRetry
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	neg := func(name string, d time.Duration) {
		if d < 0 {
			errs = append(errs, fmt.Errorf("evidence: Config.%s is negative (%v)", name, d))
		}
	}
	neg("TTL", c.TTL)
	neg("NegativeTTL", c.NegativeTTL)
	neg("MaxAge", c.MaxAge)
	neg("RefreshTimeout", c.RefreshTimeout)
	neg("RefreshRetry", c.RefreshRetry)
	if c.MaxRows < 0 {
		errs = append(errs, fmt.Errorf("evidence: Config.MaxRows is negative (%d)", c.MaxRows))
	}
	if err := checkKey("Config.Fingerprint", c.Fingerprint, true); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkKey validates one key part; name says which field the caller gave.
func checkKey(name, v string, emptyOK bool) error {
	if v == "" && !emptyOK {
		return fmt.Errorf("evidence: %s is empty", name)
	}
	if len(v) > maxKeyLen {
		return fmt.Errorf("evidence: %s is %d bytes long; the limit is %d", name, len(v), maxKeyLen)
	}
	return nil
}
