package api

import "github.com/hostguard/hostguard/health"

// Host is one host of the host tracker: its status, plus how long its
// backoff still runs, in seconds. It answers GET /v1/hosts/{name}.
type Host struct {
	health.Status
	RetryInSeconds float64 `json:"retry_in_seconds"`
}

// TouchRequest is the body of POST /v1/hosts/{name}/touch. OK is a
// pointer because missing is an error: true if the host answered.
type TouchRequest struct {
	OK *bool `json:"ok"`
}

// TouchResult answers POST /v1/hosts/{name}/touch: the host after the
// touch, and whether it counted (see health.TouchResult).
type TouchResult struct {
	Host
	Counted bool `json:"counted"`
}

// HostPage answers GET /v1/hosts.
type HostPage struct {
	Hosts []Host `json:"hosts"`
	// Next, when not empty, is the after= value of the next page.
	Next string `json:"next,omitempty"`
}

// HostReset answers POST /v1/hosts/{name}/reset.
type HostReset struct {
	Name string `json:"name"`
	// Reset is false when the tracker held no record of the host.
	Reset bool `json:"reset"`
}
