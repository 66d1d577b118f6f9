// Package budgetdriver is the seam between package budget and the storage
// engines that keep its counters: the Store interface a budget.Budget
// runs on, the optional SettingsStore, and the parameters and results of
// their methods.
//
// It is for engine authors. store/sqlite and store/postgres implement
// SettingsStore and pass the conformance suite store/storetest; an
// application gets a store from hostguard.Open, hands it to budget.New
// (budget.Store and budget.SettingsStore are this package's), and never
// calls a method of it or names a type of this package.
//
// The Budget owns every rule: allowances, reserves, shares and what a
// refusal means. It turns each request into charges with their limits,
// and a driver loads, locks and saves: each method is one transaction
// over the counters, pacing slots and grants it names. The admission's
// decision procedure, its lock order and its checked arithmetic are
// written once in internal/budgetstore, which both engines call.
//
// This package cannot import budget, which imports it, so it has its own
// Kind, with the two sum counters CounterSource and CounterTotal; the
// grant errors are budget's own values.
package budgetdriver
