// Package storetest is the conformance suite that every hostguard store
// passes. Each store's tests call Run with a function that makes a fresh,
// empty database; the suite then checks every capability against it.
//
// Capability cases live in files named for the capability (health.go,
// retry.go, ...); Run lists them.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/hostguard/hostguard"
)

// Harness is one isolated database made for one test.
type Harness struct {
	// Engine is "sqlite" or "postgres".
	Engine string
	// Open returns a new handle on the test's database. Every call is a
	// separate handle with its own connections, as a separate node (or a
	// restarted process) would have. Handles are closed when the test ends;
	// closing one earlier is allowed.
	Open func(t testing.TB) hostguard.Store
	// OpenPartitioned, when set, returns a handle like Open's whose every
	// connection to the database runs through the Partition it returns
	// (NewPartition), so that a case can cut one node off the database
	// and heal it. Engines without a network leave it nil, and the cases
	// that need it skip.
	OpenPartitioned func(t testing.TB) (hostguard.Store, *Partition)
}

// MultiNode reports whether several handles act as independent nodes
// writing at once (PostgreSQL). SQLite handles share one file and serialise
// their writes.
func (h *Harness) MultiNode() bool { return h.Engine == "postgres" }

// NewFunc makes a fresh, empty database for one test.
type NewFunc func(t *testing.T) *Harness

// Run runs the whole conformance suite.
func Run(t *testing.T, newHarness NewFunc) {
	t.Run("base", func(t *testing.T) { testBase(t, newHarness) })
	t.Run("health", func(t *testing.T) { testHealth(t, newHarness) })
	t.Run("evidence", func(t *testing.T) { testEvidence(t, newHarness) })
	t.Run("evidence policy", func(t *testing.T) { testEvidencePolicy(t, newHarness) })
	t.Run("feed", func(t *testing.T) { testFeed(t, newHarness) })
	t.Run("retry", func(t *testing.T) { testRetry(t, newHarness) })
	t.Run("retry succeed and claim", func(t *testing.T) { testRetrySucceedClaim(t, newHarness) })
	t.Run("retry wakes", func(t *testing.T) { testRetryWakes(t, newHarness) })
	t.Run("retry list", func(t *testing.T) { testRetryList(t, newHarness) })
	t.Run("retry host wake", func(t *testing.T) { testRetryHost(t, newHarness) })
	t.Run("retry host wake, many items", func(t *testing.T) { testRetryWakeMany(t, newHarness) })
	t.Run("retry host wake plan", func(t *testing.T) { testRetryHostPlan(t, newHarness) })
	t.Run("budget", func(t *testing.T) { testBudget(t, newHarness) })
	t.Run("budget settings", func(t *testing.T) { testBudgetSettings(t, newHarness) })
	t.Run("budget limits", func(t *testing.T) { testBudgetLimits(t, newHarness) })
	t.Run("leader", func(t *testing.T) { testLeader(t, newHarness) })
	t.Run("guard share", func(t *testing.T) { testGuardShare(t, newHarness) })
	t.Run("strict strings", func(t *testing.T) {
		t.Run("budget", func(t *testing.T) { testBudgetStrings(t, newHarness) })
		t.Run("evidence", func(t *testing.T) { testEvidenceStrings(t, newHarness) })
		t.Run("health", func(t *testing.T) { testHealthStrings(t, newHarness) })
	})
}

// badTexts are strings every capability refuses, with the reason it gives.
// PostgreSQL refuses NUL and invalid UTF-8 in text while SQLite keeps
// them, so each capability must refuse them itself, before the store: the
// strict-strings cases check that every engine answers with exactly the
// same error and stores nothing.
var badTexts = []struct{ what, s, reason string }{
	{"NUL", "a\x00b", "contains a NUL byte"},
	{"invalid UTF-8", "a\xffb", "is not valid UTF-8"},
	{"C0 control", "a\x07b", "contains control character U+0007"},
	{"DEL", "a\x7fb", "contains control character U+007F"},
	{"C1 control", "a\u0085b", "contains control character U+0085"},
}

// ctx returns a context bounded by the test's deadline, so that a hung
// statement fails the test instead of the whole run.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

type schemaVersioner interface {
	SchemaVersion(ctx context.Context) (int, error)
}

func testBase(t *testing.T, newHarness NewFunc) {
	t.Run("migrations applied and idempotent on reopen", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		first, ok := h.Open(t).(schemaVersioner)
		if !ok {
			t.Fatalf("%s store does not report its schema version", h.Engine)
		}
		v1, err := first.SchemaVersion(ctx(t))
		if err != nil || v1 < 1 {
			t.Fatalf("schema version %d, %v; want >= 1", v1, err)
		}
		second := h.Open(t).(schemaVersioner)
		v2, err := second.SchemaVersion(ctx(t))
		if err != nil || v2 != v1 {
			t.Fatalf("reopened schema version %d, %v; want %d", v2, err, v1)
		}
	})
}
