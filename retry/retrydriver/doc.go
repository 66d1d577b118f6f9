// Package retrydriver is the seam between package retry and the storage
// engines that keep its items: the Store interface a retry.Scheduler runs
// on, and the parameters and results of its methods.
//
// It is for engine authors. store/sqlite and store/postgres implement
// Store and pass the conformance suite store/storetest; an application
// gets a Store from hostguard.Open, hands it to retry.New (retry.Store is
// this package's Store), and never calls a method of it or names a type of
// this package.
//
// The Scheduler owns every rule: ladders and jitter, token checks, what an
// item looks like from outside, how counts add up. A driver loads, locks
// and saves: each method is one transaction that does to the rows it
// names what its doc says, deciding nothing of its own. Where the contract
// has a driver choose (which ready items a claim takes, whether a write
// wakes waiting claims), internal/retrystore holds the one implementation
// both engines call.
//
// This package cannot import retry, which imports it, so it has its own
// copies of what the seam carries: State and Op have retry.State's and
// retry.Op's values, and NewItem and Observed hold what a store needs of
// retry.NewItem and retry.ObserveResult. ErrNotFound is retry.ErrNotFound.
package retrydriver
