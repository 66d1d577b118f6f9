package budget

import "github.com/hostguard/hostguard/budget/budgetdriver"

// Store is the durable, shared part of a Budget; see package budgetdriver.
// hostguard.Open returns one (SQLite for one node, PostgreSQL for
// several); an application hands it to New and never calls its methods.
type Store = budgetdriver.Store
