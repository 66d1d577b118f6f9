package server

import "github.com/hostguard/hostguard/api"

// The tests read the daemon's answers into package api's types; these
// names keep the tests that predate the package (and the ones written
// beside it) reading as they did.
type (
	statusReport = api.Status
	feedView     = api.Feed
	leaderView   = api.Leader
)
