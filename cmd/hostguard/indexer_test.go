package main

import (
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/fakeindexer"
)

// e2eKey is the indexer's API key; the daemon reads it from E2E_INDEXER_KEY.
const e2eKey = "e2e-indexer-key-9f8e7d"

// newIndexer starts a Newznab indexer on 127.0.0.1 that takes e2eKey and
// lists four releases, a minute apart, which it returns oldest first. Like
// real indexers it writes the key into download links.
func newIndexer(t *testing.T) (*fakeindexer.Indexer, []fakeindexer.Release) {
	x := fakeindexer.New(fakeindexer.Options{APIKey: e2eKey})
	t.Cleanup(x.Close)
	return x, x.PublishEvery(4, time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC), time.Minute)
}
