// Package queue measures hostguard's retry scheduler against River, the job
// queue a Go team would most likely pick instead, on the same databases.
//
// The shared scenario is River's own burn-down benchmark: insert n no-op
// jobs, then work them all (add → claim → succeed) as fast as the system
// goes. The scenarios River's benchmark leaves out are the ones a
// long-horizon retry scheduler lives in: a large backlog of dormant items
// with a trickle of due work (how long does a due item wait, and what does
// a claim cost, when a million rows are waiting for next month?), and a
// burst of reactivations (many dormant items made due at once).
//
// Each system gets its own database: FreshPostgres drops and recreates one
// on the given server for every run, and SQLite runs use a new file.
package queue
