package retry

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/internal/inputtext"
	"github.com/hostguard/hostguard/retry/retrydriver"
)

// Limits on what an item may hold.
const (
	// MaxIDBytes is the longest id accepted.
	MaxIDBytes = 256
	// MaxPayloadBytes is the largest payload accepted.
	MaxPayloadBytes = 64 << 10
	// MaxPriority bounds priorities in both directions, so that boosts and
	// sums can never overflow a 32-bit database column.
	MaxPriority = 1_000_000_000
)

// State is where an item is in its life.
type State int

// The states of an item. Their numeric values are the driver's, which
// stores them.
const (
	// Pending items have never been handed to a worker (or every lease on
	// them was released unused).
	Pending = State(retrydriver.Pending)
	// Scheduled items have been tried and wait for their next attempt.
	Scheduled = State(retrydriver.Scheduled)
	// Leased items are held by a worker until the lease ends.
	Leased = State(retrydriver.Leased)
	// Done items succeeded. They stay until Forget.
	Done = State(retrydriver.Done)
)

// States lists every state in order.
var States = []State{Pending, Scheduled, Leased, Done}

func (s State) String() string { return retrydriver.State(s).String() }

// Valid reports whether s is one of the four states.
func (s State) Valid() bool { return s >= Pending && s <= Done }

// MarshalText encodes the state by name, so JSON carries "scheduled", not 1.
func (s State) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("retry: unknown state %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText is the inverse of MarshalText.
func (s *State) UnmarshalText(b []byte) error {
	for _, st := range States {
		if string(b) == st.String() {
			*s = st
			return nil
		}
	}
	return invalid("state", "unknown state %q (want pending, scheduled, leased or done)", b)
}

// NewItem is a piece of work handed to Add.
type NewItem struct {
	// ID names the work, e.g. a 40-hex infohash: 1 to MaxIDBytes bytes of
	// UTF-8 without NUL or control characters.
	ID string `json:"id"`
	// Priority orders claims: higher first. Zero is the normal priority;
	// negative values are allowed.
	Priority int `json:"priority,omitempty"`
	// Payload is handed back with every lease; at most MaxPayloadBytes.
	// Nil means none.
	Payload []byte `json:"payload,omitempty"`
	// NotBefore delays the first attempt. Zero means due at once.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Host names the host the work depends on (a host name or an IP
	// address, never a URL; see NormalizeHost), so that the host
	// answering again wakes the item (Scheduler.WakeHost). Empty means
	// none. Add of an id that is held already leaves its host alone; a
	// failure may name a host (Outcome.Host).
	Host string `json:"host,omitempty"`
}

// AddResult says what Add did.
type AddResult struct {
	// Added counts new items.
	Added int `json:"added"`
	// Existing counts ids that were already held. Their state, schedule and
	// history are untouched; only a higher priority is taken over.
	Existing int `json:"existing"`
}

// Item is everything the scheduler holds about one id.
type Item struct {
	ID       string `json:"id"`
	Priority int    `json:"priority"`
	Payload  []byte `json:"payload,omitempty"`
	State    State  `json:"state"`
	// NextAt is when a pending or scheduled item is next due. It is zero
	// for leased and done items.
	NextAt time.Time `json:"next_at,omitzero"`
	// LeaseUntil is when the current lease ends (leased items only).
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Worker is the name the current lease holder gave (leased items only).
	Worker string `json:"worker,omitempty"`
	// Attempts counts leases handed out, minus those released unused.
	Attempts int `json:"attempts"`
	// Failures counts failures since the last success; it selects the step
	// of the delay ladder.
	Failures int `json:"failures"`
	// Expiries counts leases that ran out in a row without being settled.
	Expiries int `json:"expiries"`
	// LastClass is the class of the latest failure, empty if none.
	LastClass string `json:"last_class,omitempty"`
	// Host is the host the item depends on (NormalizeHost's form), empty
	// if none.
	Host string `json:"host,omitempty"`
	// History holds the latest failures, oldest first, at most HistoryLen.
	History []Attempt `json:"history,omitempty"`
	// Sources holds the latest word from each source that named itself
	// (Observe and failed outcomes with a Source), oldest first, one entry
	// per source and class, at most SourcesLen.
	Sources []Evidence `json:"sources,omitempty"`
	// Observations counts Observe calls on the item; LastSeen is the latest.
	Observations int       `json:"observations"`
	LastSeen     time.Time `json:"last_seen,omitzero"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// checkID rejects ids the stores cannot hold faithfully or that would
// corrupt logs and status pages. Its error's Field is "id".
func checkID(id string) error {
	switch {
	case id == "":
		return invalid("id", "is empty")
	case len(id) > MaxIDBytes:
		return invalid("id", "%.32q... is %d bytes, more than %d", id, len(id), MaxIDBytes)
	}
	if err := inputtext.Check(id); err != nil {
		return invalid("id", "%q %v", id, err)
	}
	return nil
}

func checkPriority(field string, p int) error {
	if p > MaxPriority || p < -MaxPriority {
		return invalid(field, "%d is outside ±%d", p, MaxPriority)
	}
	return nil
}

func checkPayload(p []byte) error {
	if len(p) > MaxPayloadBytes {
		return invalid("payload", "is %d bytes, more than %d", len(p), MaxPayloadBytes)
	}
	return nil
}

// Stats summarises the scheduler's items.
type Stats struct {
	// Total counts every item.
	Total int `json:"total"`
	// ByState counts items per state name; every state is present.
	ByState map[string]int `json:"by_state"`
	// ByClass counts scheduled items by the class of their latest failure,
	// which is what they are waiting out.
	ByClass map[string]int `json:"by_class"`
	// DueNow counts the pending and scheduled items whose time has come:
	// the "now" bucket of Scheduler.Due, and what GET /v1/items lists
	// with due_before set to now.
	DueNow int `json:"due_now"`
	// LeasesExpired counts the leased items whose lease has run out and
	// that no worker settled or extended: a claim takes them again. Many
	// of them mean workers die or hang.
	LeasesExpired int `json:"leases_expired"`
	// OldestDueLag is how long the longest-waiting due item has been due;
	// zero when nothing is due. A growing lag means workers fall behind.
	OldestDueLag time.Duration `json:"-"`
	// Pruned counts the done items retention (Scheduler.Prune) has
	// deleted, ever, on every node sharing the store: a counter for
	// metrics. PrunedAt is when it last deleted any; zero if never.
	Pruned   int64     `json:"pruned"`
	PrunedAt time.Time `json:"pruned_at,omitzero"`
	// HostWakes counts the times a host answering again made parked items
	// due (Scheduler.WakeHost, counting only calls that moved any), and
	// HostWoken the items they moved, ever, on every node sharing the
	// store: counters for metrics. HostWokenAt is the latest such wake;
	// zero if never.
	HostWakes   int64     `json:"host_wakes"`
	HostWoken   int64     `json:"host_woken"`
	HostWokenAt time.Time `json:"host_woken_at,omitzero"`
	// Schedule is what the Scheduler that answered applies, so that a
	// dashboard or `hostguard items stats` shows why items wait as long
	// as they do.
	Schedule Schedule `json:"schedule"`
}

// Schedule is the part of a Scheduler's Config that decides waits.
type Schedule struct {
	// Default is the ladder of classes without one of their own.
	Default Ladder `json:"default"`
	// Classes are the classes with a schedule of their own.
	Classes map[string]ClassConfig `json:"classes"`
	// ReactivateWithin is how soon a sighting makes a waiting item due.
	ReactivateWithin time.Duration `json:"-"`
	// KeepDone is how long done items are kept; negative for ever.
	KeepDone time.Duration `json:"-"`
	// WakeJitter is the spread of a host's wake (Config.WakeJitter); zero
	// when jitter is off.
	WakeJitter time.Duration `json:"-"`
	// SyncSightings is whether every sighting waits for the disk
	// (Config.SyncSightings).
	SyncSightings bool `json:"sync_sightings"`
}

// MarshalJSON spells the durations as Go duration strings, as the
// configuration file does.
func (s Schedule) MarshalJSON() ([]byte, error) {
	type plain Schedule
	keep := s.KeepDone.String()
	if s.KeepDone < 0 {
		keep = "forever"
	}
	classes := s.Classes
	if classes == nil {
		classes = map[string]ClassConfig{}
	}
	s.Classes = classes
	return json.Marshal(struct {
		plain
		ReactivateWithin string `json:"reactivate_within"`
		KeepDone         string `json:"keep_done"`
		WakeJitter       string `json:"wake_jitter"`
	}{plain(s), s.ReactivateWithin.String(), keep, s.WakeJitter.String()})
}

// MarshalJSON adds the lag in seconds, the unit people read dashboards in.
func (s Stats) MarshalJSON() ([]byte, error) {
	type plain Stats
	return json.Marshal(struct {
		plain
		Lag float64 `json:"oldest_due_lag_seconds"`
	}{plain(s), s.OldestDueLag.Seconds()})
}

// itemFrom builds the caller's view of a stored record: the time column
// means the next attempt or the lease's end depending on the state, and a
// worker name belongs to a live lease only.
func itemFrom(r *retrydriver.Record, payload []byte) (Item, error) {
	it := Item{
		ID:           r.ID,
		Priority:     r.Priority,
		Payload:      payload,
		State:        State(r.State),
		Attempts:     r.Attempts,
		Failures:     r.Failures,
		Expiries:     r.Expiries,
		LastClass:    r.LastClass,
		Host:         r.Host,
		Observations: r.Observations,
		LastSeen:     r.LastSeen,
		CreatedAt:    r.CreatedAt,
		UpdatedAt:    r.UpdatedAt,
	}
	switch r.State {
	case retrydriver.Pending, retrydriver.Scheduled:
		it.NextAt = r.NextAt
	case retrydriver.Leased:
		it.LeaseUntil = r.NextAt
		it.Worker = r.Worker
	}
	h, err := decodeHistory(r.History)
	if err != nil {
		return Item{}, fmt.Errorf("retry: item %q: %w", r.ID, err)
	}
	it.History = h
	if it.Sources, err = decodeEvidence(r.Sources); err != nil {
		return Item{}, fmt.Errorf("retry: item %q: %w", r.ID, err)
	}
	return it, nil
}

// statsFrom sums a store's counters into Stats: every state present, the
// classes of scheduled items, and the lag of the oldest due item at now.
func statsFrom(res retrydriver.StatsResult, now time.Time) Stats {
	st := Stats{ByState: make(map[string]int, len(States)), ByClass: map[string]int{}, DueNow: res.DueNow, LeasesExpired: res.LeasesExpired}
	for _, state := range States {
		st.ByState[state.String()] = 0
	}
	for _, c := range res.Counts {
		if c.N == 0 {
			continue
		}
		st.Total += c.N
		st.ByState[State(c.State).String()] += c.N
		if c.State == retrydriver.Scheduled && c.Class != "" {
			st.ByClass[c.Class] += c.N
		}
	}
	if !res.OldestDue.IsZero() {
		st.OldestDueLag = max(now.Sub(res.OldestDue), 0)
	}
	st.Pruned, st.PrunedAt = res.Pruned, res.PrunedAt
	st.HostWakes, st.HostWoken, st.HostWokenAt = res.HostWakes, res.HostWoken, res.HostWokenAt
	return st
}
