package budgetdriver

// Kind is a budget.Kind as the store keeps it: the name of a kind of work,
// or of one of the sum counters below. A store treats it as an opaque
// name, except that it knows the two sums. budgetdriver cannot name
// budget.Kind (package budget imports this one), so it has its own type;
// the Budget converts at the seam, and a test in package budget holds the
// sums equal to budget.CounterSource and budget.CounterTotal.
type Kind string

// The counter kinds that are sums rather than kinds of work: one counter
// per source for everything charged to the source's allowance, and one
// cluster-wide counter for the total allowance (see Store.BudgetAdmit for
// how the total starts).
const (
	CounterSource Kind = "source"
	CounterTotal  Kind = "total"
)
