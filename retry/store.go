package retry

import "github.com/hostguard/hostguard/retry/retrydriver"

// Store is the durable part of a Scheduler; see package retrydriver.
// hostguard.Open returns one (SQLite for one node, PostgreSQL for
// several); an application hands it to New and never calls its methods.
type Store = retrydriver.Store
