package feed

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hostguard/hostguard/internal/inputtext"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxPages    = 5
	DefaultSeenCap     = 20000
	DefaultSeenFor     = 30 * 24 * time.Hour
	DefaultMaxGaps     = 16
	DefaultSyncTimeout = 2 * time.Minute
)

// Config tunes a Syncer. The zero value is ready to use.
type Config struct {
	// MaxPages bounds the page requests of one Sync or Resume, head page
	// included. Default (zero) 5; it must not be negative.
	MaxPages int
	// CatchUp is how many pages below the head a feed's first sync also
	// reads. Default (zero) none: the first sync reads the head page only,
	// and older items are never fetched.
	CatchUp int
	// SeenCap bounds how many handed-out item ids are remembered per feed
	// (for telling re-read items from new ones); the oldest are forgotten
	// first. It must comfortably exceed MaxPages times the page size.
	// Default (zero) 20 000; negative: no bound.
	SeenCap int
	// SeenFor is how long a handed-out id is remembered; older ones are
	// forgotten at the feed's next commit, besides SeenCap. Default (zero)
	// 30 days; negative: until SeenCap drops them.
	SeenFor time.Duration
	// SyncTimeout bounds the time one Sync or Resume spends reading pages
	// (admission waits included), as MaxPages bounds their number: when it
	// runs out, the sync stops with what it read saved (StopTimeLimit), or
	// fails when not even the first page came back. Default (zero) 2
	// minutes; negative: no bound but the context's.
	SyncTimeout time.Duration
	// MaxGaps bounds how many separate unread stretches a feed may have.
	// A new gap beyond it makes the Syncer give up the oldest one (logged),
	// which only happens when bursts keep outrunning MaxPages. Default
	// (zero) 16; it must not be negative.
	MaxGaps int
	// Admitter admits every page request. Default (nil): every request is
	// admitted.
	Admitter Admitter
	// Now is the clock. Default (nil) time.Now.
	Now func() time.Time
	// Logger receives a line when a gap is given up. Default (nil)
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.MaxPages == 0 {
		c.MaxPages = DefaultMaxPages
	}
	if c.SeenCap == 0 {
		c.SeenCap = DefaultSeenCap
	}
	if c.SeenFor == 0 {
		c.SeenFor = DefaultSeenFor
	}
	if c.SyncTimeout == 0 {
		c.SyncTimeout = DefaultSyncTimeout
	}
	if c.MaxGaps == 0 {
		c.MaxGaps = DefaultMaxGaps
	}
	if c.Admitter == nil {
		c.Admitter = admitAll{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first bad field as an *InputError; NewSyncer
// refuses what it refuses.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"max_pages", c.MaxPages}, {"catch_up", c.CatchUp}, {"max_gaps", c.MaxGaps}} {
		if f.v < 0 {
			return &InputError{Field: f.name, Reason: fmt.Sprintf("is %d; want 0 (the default) or more", f.v)}
		}
	}
	return nil
}

// MaxNameLen bounds feed names, which are keys in the store and in logs.
const MaxNameLen = 200

// checkName checks a feed name; field is how the caller names it.
func checkName(field, name string) error {
	switch {
	case name == "":
		return &InputError{Field: field, Reason: "is empty"}
	case len(name) > MaxNameLen:
		return &InputError{Field: field, Reason: fmt.Sprintf("is %d bytes long; the limit is %d", len(name), MaxNameLen)}
	}
	if err := inputtext.Check(name); err != nil {
		return &InputError{Field: field, Reason: err.Error()}
	}
	return nil
}
