package evidence

import (
	"log/slog"
	"time"

	"github.com/hostguard/hostguard/internal/inputtext"
)

// Defaults for the zero fields of Config.
const (
	DefaultTTL            = 6 * time.Hour
	DefaultNegativeTTL    = 24 * time.Hour
	DefaultMaxRows        = 60000
	DefaultMaxAge         = 15 * time.Second
	DefaultRefreshTimeout = 30 * time.Second
	DefaultRefreshRetry   = time.Second
)

// Limits of what a Book takes. Strings must also be clean text: no NUL
// byte, valid UTF-8, no control character.
const (
	// MaxSourceBytes, MaxSubjectBytes and MaxFingerprintBytes bound the
	// three parts of a verdict's key, so that a runaway caller cannot fill
	// the table with megabyte keys.
	MaxSourceBytes      = 1024
	MaxSubjectBytes     = 1024
	MaxFingerprintBytes = 1024
	// MaxDuration bounds every duration of Config: beyond a year it is a
	// unit slip.
	MaxDuration = 366 * 24 * time.Hour
	// MaxMaxRows bounds Config.MaxRows.
	MaxMaxRows = 1_000_000_000
)

const (
	// trimBatch is how many rows one Record may delete to keep the cap.
	trimBatch = 8
	// pruneBatch is how many rows one Prune statement deletes.
	pruneBatch = 500
)

// Config tunes a Book. The zero value is ready to use.
type Config struct {
	// Fingerprint is the policy fingerprint this node starts with (see
	// Fingerprint): the current one until a policy is stored (see
	// Book.InvalidatePolicy). Verdicts are recorded and read under the
	// current one. Default "": one unnamed policy, for callers whose
	// settings never change what a check means. At most
	// MaxFingerprintBytes.
	Fingerprint string
	// TTL is how long an Available verdict counts. Default (zero) 6 h.
	// Every duration of Config is at most MaxDuration; none may be
	// negative.
	TTL time.Duration
	// NegativeTTL is how long an Unavailable verdict counts; after it, the
	// subject reads as Unknown until checked again. Default (zero) 24 h.
	NegativeTTL time.Duration
	// MaxRows caps the verdict table; the oldest rows are pruned first.
	// Default (zero) 60 000. At most MaxMaxRows.
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

// Validate checks c as New does and returns an *InputError naming the first
// bad field as the configuration file spells it ("ttl", "max_rows",
// "fingerprint").
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"ttl", c.TTL}, {"negative_ttl", c.NegativeTTL}, {"max_age", c.MaxAge}, {"refresh_timeout", c.RefreshTimeout}, {"refresh_retry", c.RefreshRetry}} {
		if f.d < 0 || f.d > MaxDuration {
			return invalid(f.name, "is %v; want 0 (the default) up to %v", f.d, MaxDuration)
		}
	}
	if c.MaxRows < 0 || c.MaxRows > MaxMaxRows {
		return invalid("max_rows", "is %d; want 0 (default %d) up to %d", c.MaxRows, DefaultMaxRows, MaxMaxRows)
	}
	return checkKey("fingerprint", c.Fingerprint, MaxFingerprintBytes, true)
}

// checkKey validates one key part; field names it as the caller gave it.
func checkKey(field, v string, limit int, emptyOK bool) error {
	if v == "" && !emptyOK {
		return invalid(field, "is empty")
	}
	if len(v) > limit {
		return invalid(field, "is %d bytes long; the limit is %d", len(v), limit)
	}
	if err := inputtext.Check(v); err != nil {
		return invalid(field, "%v", err)
	}
	return nil
}

// clip shortens a value quoted in a reason.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
