package api

import (
	"time"

	"github.com/hostguard/hostguard/health"
)

// Status answers GET /v1/status: what the dashboard shows.
type Status struct {
	Time time.Time `json:"time"`
	// Version, Node, StartedAt and UptimeSeconds describe this daemon;
	// Store is the kind of store it runs on, when its program said.
	Version       string    `json:"version"`
	Node          string    `json:"node,omitempty"`
	Store         string    `json:"store,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds float64   `json:"uptime_seconds"`

	Guard StatusGuard  `json:"guard"`
	Hosts *StatusHosts `json:"hosts,omitempty"`
	// Items and ItemsDue come from one read of the store: ItemsDue's
	// "now" bucket is Items.DueNow.
	Items *QueueStats `json:"items,omitempty"`
	// ItemsDue counts the waiting items by when they are next due.
	ItemsDue *DueHistogram `json:"items_due,omitempty"`
	// Budget is today's usage against the allowances.
	Budget *BudgetReport `json:"budget,omitempty"`
	// Leader says whether this node runs the periodic work.
	Leader Leader `json:"leader"`
	// Feeds are the configured and stored feeds, each last error cut
	// to its short form.
	Feeds []Feed `json:"feeds,omitempty"`
	// Evidence counts the subjects of the last computed evidence set.
	Evidence *StatusEvidence `json:"evidence,omitempty"`
	// Problems names the parts that could not be read (a store error);
	// the rest of the report is still good.
	Problems []string `json:"problems,omitempty"`
}

// StatusGuard is the guard's part of the status report.
type StatusGuard struct {
	// Endpoints counts the records the guard holds.
	Endpoints int            `json:"endpoints"`
	ByState   map[string]int `json:"by_state"`
	// RemoteTickets counts acquired, unreported API tickets.
	RemoteTickets int `json:"remote_tickets"`
	// NotClosed lists the open and half-open endpoints.
	NotClosed []StatusEndpoint `json:"not_closed"`
}

// StatusEndpoint is an endpoint as the dashboard shows it: what GET
// /v1/guard says, and since when it has been in its state.
type StatusEndpoint struct {
	Endpoint
	// Since is when the endpoint entered its state: for half-open, the
	// end of its open period; for open, the start of it.
	Since *time.Time `json:"since,omitempty"`
	// Probing is true while the guard's own probe holds the trial.
	Probing bool `json:"probing"`
	// Openings counts the open periods in a row without an answer.
	Openings int `json:"openings"`
}

// StatusHosts is the host tracker's part of the status report.
type StatusHosts struct {
	health.Counts
	// InBackoff lists up to 100 hosts in backoff, by name.
	InBackoff []Host `json:"in_backoff"`
	// UnhealthyHosts lists up to 100 hosts with a failure since their
	// last success, those in backoff first, each with the outcomes this
	// node recorded for it lately.
	UnhealthyHosts []StatusHost `json:"unhealthy_hosts"`
}

// StatusHost is an unhealthy host of the status report.
type StatusHost struct {
	Host
	// Recent is up to 20 outcomes this node answered touches with since
	// it started, oldest first.
	Recent []HostOutcome `json:"recent"`
}

// HostOutcome is one entry of a host's recent outcomes.
type HostOutcome struct {
	At      time.Time `json:"at"`
	Outcome string    `json:"outcome"`
}

// StatusEvidence is the evidence part of the status report. It comes
// from the book's last computed set; the figures may be up to the book's
// MaxAge old.
type StatusEvidence struct {
	Fingerprint string `json:"fingerprint"`
	// Known is false until the first set has been computed.
	Known       bool       `json:"known"`
	ComputedAt  *time.Time `json:"computed_at,omitempty"`
	Available   int        `json:"available"`
	Unavailable int        `json:"unavailable"`
}

// Leader answers GET /v1/leader.
type Leader struct {
	// Leading is whether this node runs the periodic work (feed polls,
	// pruning) now.
	Leading bool `json:"leading"`
	// Elected is false when the daemon has no elector and so always
	// leads.
	Elected bool `json:"elected"`
	// Node is this node's id in the election.
	Node string `json:"node,omitempty"`
	// Term is the term this node leads in, 0 when it does not lead.
	Term int64 `json:"term"`
	// Lease is the election as the store has it.
	Lease *LeaderLease `json:"lease,omitempty"`
}

// LeaderLease is the election as the store has it.
type LeaderLease struct {
	Election string `json:"election"`
	// Holder is the leading node; empty on a single-node store, where
	// every node leads, or when nobody holds the lease.
	Holder    string     `json:"holder"`
	Term      int64      `json:"term"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Readiness answers GET /readyz, with 200 or 503.
type Readiness struct {
	Status string            `json:"status"` // "ready" or "not ready"
	Checks map[string]string `json:"checks"` // "ok", or why not
}
