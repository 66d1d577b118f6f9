package api

import "github.com/hostguard/hostguard/budget"

// Grant answers POST /v1/budget/admit: the admission, charged.
type Grant = budget.Grant

// AdmitRequest is the body of POST /v1/budget/admit.
type AdmitRequest struct {
	Source string `json:"source,omitempty"`
	Kind   string `json:"kind"`
	Cost   int64  `json:"cost,omitempty"`
	// Wait asks for the source's next pacing slot instead of a refusal
	// when the source was asked too recently; the answer comes when the
	// slot does.
	Wait bool `json:"wait,omitempty"`
}

// GrantSettleRequest is the body of POST /v1/budget/grants/{id}/settle.
// Actual is a pointer because missing is an error.
type GrantSettleRequest struct {
	Actual *int64 `json:"actual"`
}

// GrantSettlement answers POST /v1/budget/grants/{id}/settle.
type GrantSettlement struct {
	ID     string `json:"id"`
	Actual int64  `json:"actual"`
}

// BudgetReport answers GET /v1/budget: budget.Report with durations in
// seconds, like every other duration of the API, rather than Go's
// nanoseconds.
type BudgetReport struct {
	budget.Report
	Sources []BudgetSource `json:"sources"`
}

// BudgetSource is one source of a BudgetReport.
type BudgetSource struct {
	budget.SourceReport
	// These hide the nanosecond fields of the same JSON names.
	HidePollInterval    *int    `json:"poll_interval,omitempty"`
	HidePace            *int    `json:"pace,omitempty"`
	PollIntervalSeconds float64 `json:"poll_interval_seconds"`
	PaceSeconds         float64 `json:"pace_seconds"`
}

// SourceRequest is the body of PUT /v1/budget/sources/{name}. A PUT
// replaces what the owner says about the source; fields left out take
// their defaults, except the limit the source reported about itself,
// which the owner does not own and which stays unless given.
type SourceRequest struct {
	OwnerDailyLimit    *int64   `json:"owner_daily_limit,omitempty"`
	ReportedDailyLimit *int64   `json:"reported_daily_limit,omitempty"`
	Share              string   `json:"share,omitempty"`
	ReservePercent     *int64   `json:"reserve_percent,omitempty"`
	PaceSeconds        *float64 `json:"pace_seconds,omitempty"`
}

// SourceConfig answers PUT /v1/budget/sources/{name}: the source's
// configuration as the API shows it.
type SourceConfig struct {
	Name               string  `json:"name"`
	OwnerDailyLimit    *int64  `json:"owner_daily_limit"`
	ReportedDailyLimit *int64  `json:"reported_daily_limit"`
	Share              string  `json:"share"`
	ReservePercent     *int64  `json:"reserve_percent"`
	PaceSeconds        float64 `json:"pace_seconds"`
	// Created is true when the PUT added the source rather than replaced
	// it.
	Created bool `json:"created"`
}

// SourceReset answers POST /v1/budget/sources/{name}/reset.
type SourceReset struct {
	Name string `json:"name"`
	// Reset is false when the source had no run-time settings to drop.
	Reset bool `json:"reset"`
}

// PauseRequest is the body of POST /v1/budget/pause. Paused is a pointer
// because missing is an error.
type PauseRequest struct {
	Paused *bool `json:"paused"`
}

// PauseResult answers POST /v1/budget/pause.
type PauseResult struct {
	Paused bool `json:"paused"`
}

// SourcePauseResult answers POST /v1/budget/sources/{name}/pause, whose
// body is a PauseRequest.
type SourcePauseResult struct {
	Name   string `json:"name"`
	Paused bool   `json:"paused"`
}
